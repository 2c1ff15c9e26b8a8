"""The collective-communication arguments a PyTorch profiler (Kineto) trace records.

PyTorch's c10d writes the arguments of every collective on the `record_param_comms` CPU op
("Collective name", "In msg nelems", "Out msg nelems", "dtype", "Group size", "Process Group Name",
"Process Group Ranks", ...), and Kineto since PyTorch 2.3 copies them onto the NCCL/RCCL kernel.
The chrome-trace parser keeps the columns every event shares; these arguments exist on a few
events only, so they are read here, in a second pass that decodes only the chunks holding them (a
substring test on the raw text, no JSON decoding of the rest). Vendor argument names become the
column names below and nowhere else.

Not a registered parser: `profaudit.ranks` calls `read_comm_args(path)` for the Kineto traces of a
distributed run.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl

from profaudit.errors import InputError
from profaudit.parsers.jsonstream import TraceWalker, merge_chunks
from profaudit.parsers.textsafe import check_orjson_room

# vendor argument -> (column, dtype)
ARGS: dict[str, tuple[str, pl.DataType]] = {
    "Collective name": ("collective_name", pl.Utf8),
    "In msg nelems": ("in_msg_nelems", pl.Int64),
    "Out msg nelems": ("out_msg_nelems", pl.Int64),
    "dtype": ("dtype", pl.Utf8),
    "Group size": ("group_size", pl.Int64),
    "Process Group Name": ("process_group", pl.Utf8),
    "Process Group Description": ("process_group_desc", pl.Utf8),
    "Process Group Ranks": ("group_ranks", pl.Utf8),
    "Process Group ID": ("process_group_id", pl.Int64),
    "In split size": ("in_split_size", pl.Utf8),
    "Out split size": ("out_split_size", pl.Utf8),
    "Global rank start": ("global_rank_start", pl.Int64),
    "Global rank stride": ("global_rank_stride", pl.Int64),
    "Rank": ("arg_rank", pl.Int64),
    "Seq": ("seq", pl.Int64),
}
SCHEMA: dict[str, pl.DataType] = {
    "event": pl.Utf8,  # "op" (record_param_comms on the host) or "kernel" (the NCCL kernel)
    "external_id": pl.Int64,
    "correlation_id": pl.Int64,
    "pid": pl.Utf8,
    "tid": pl.Utf8,
    **{c: t for c, t in ARGS.values()},
}
# the texts whose presence in a chunk means it may hold collective arguments
_NEEDLES = (b'"In msg nelems"', b'"Collective name"')


_INT64 = 2**63


def _int(v, key: str, path: Path):
    """An Int64 argument: text that is no integer (and booleans, lists) is unknown, as PyTorch
    versions differ in what they write; an integer beyond 64 bits is an error naming the
    argument, where polars would otherwise have turned it into a null without a word."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    elif isinstance(v, str):
        try:
            v = int(v.strip())
        except ValueError:
            return None
    if not isinstance(v, int):
        return None
    if not -_INT64 <= v < _INT64:
        raise InputError(path, f"collective arguments: {key}: the integer {str(v)[:30]} is out of range (beyond 64 bits)")
    return v


def _text(v):
    if v is None:
        return None
    if isinstance(v, (list, dict)):
        return orjson.dumps(v).decode()
    return str(v)


def _row(e: dict, path: Path) -> dict | None:
    args = e.get("args")
    if not isinstance(args, dict) or not ("In msg nelems" in args or "Collective name" in args):
        return None
    cat = str(e.get("cat") or "").lower()
    row = {
        "event": "kernel" if cat == "kernel" else "op",
        "external_id": _int(args.get("External id", args.get("external id")), "External id", path),
        "correlation_id": _int(args.get("correlation"), "correlation", path),
        "pid": _text(e.get("pid")),
        "tid": _text(e.get("tid")),
    }
    for key, (col, dtype) in ARGS.items():
        v = args.get(key)
        row[col] = _int(v, key, path) if dtype == pl.Int64 else _text(v)
    return row


def read_comm_args(path: str | Path) -> pl.DataFrame:
    """One row per event carrying collective arguments, in file order (empty when none does)."""
    path = Path(path)
    rows: list[dict] = []

    def take(events) -> None:
        for e in events:
            if isinstance(e, dict):
                r = _row(e, path)
                if r is not None:
                    rows.append(r)

    carry: bytes | None = None  # a chunk that did not decode alone: cut inside a nested list
    for kind, a, _b in TraceWalker(path):
        if kind == "events":
            text = merge_chunks(carry, a) if carry is not None else a
            if carry is None and not any(n in text for n in _NEEDLES):
                continue
            # a chunk is about two walker blocks, unless no cut between events was found in it (a
            # carried chunk, one huge event): as any whole text handed to orjson, it needs room
            check_orjson_room(path, len(text), "chunk of trace events")
            try:
                events = orjson.loads(text)
            except orjson.JSONDecodeError:
                carry = text
                continue
            carry = None
            take(events)
        elif kind == "tail":
            if carry is not None:
                raise InputError(path, "cannot read collective arguments: a chunk of events is not valid JSON")
            take(_tail_events(path, a))
    return pl.DataFrame(rows, schema=SCHEMA, strict=False) if rows else pl.DataFrame(schema=SCHEMA)


def _tail_events(path: Path, text: bytes) -> list:
    # the tail is the last events and every key after the array, however big (a 38 MB value after
    # traceEvents segfaulted orjson here with 700-900 MB of address space left under ulimit -v)
    check_orjson_room(path, len(text), "trace tail (the last events and the keys after them)")
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        # Python's json writes NaN as a bare token; the chrome-trace parser reads those as null
        from profaudit.parsers.chrome_trace import loads_lenient

        try:
            doc = loads_lenient(text)
        except Exception as exc:  # noqa: BLE001 - one line naming the file
            raise InputError(path, f"cannot read collective arguments: {exc}") from None
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    return events if isinstance(events, list) else []
