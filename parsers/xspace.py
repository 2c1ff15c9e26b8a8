"""Decode an XSpace protobuf (`*.xplane.pb`, package `tensorflow.profiler`) from its field numbers.

Field numbers (tsl `xplane.proto`, proto3):

    XSpace          planes=1 errors=2 warnings=3 hostnames=4
    XPlane          id=1 name=2 lines=3 event_metadata=4 (map<int64,XEventMetadata>)
                    stat_metadata=5 (map<int64,XStatMetadata>) stats=6
    XLine           id=1 name=2 timestamp_ns=3 events=4 duration_ps=9 display_id=10 display_name=11
    XEvent          metadata_id=1 offset_ps=2 | num_occurrences=5 (oneof) duration_ps=3 stats=4
    XStat           metadata_id=1 double=2 uint64=3 int64=4 str=5 bytes=6 ref=7 (oneof)
    XEventMetadata  id=1 name=2 metadata=3 display_name=4 stats=5 child_id=6
    XStatMetadata   id=1 name=2 description=3

Metadata ids are per plane. A `ref_value` stat names an XStatMetadata whose *name* is the string
value; refs are resolved against the plane's stat metadata (which follows the lines on disk).

A large profile holds millions of events and stats, and one Python step per field costs more than
everything else put together, so decoding is vectorised with numpy:

- the few big messages (the XSpace, each XPlane, each XLine) are walked field by field in Python
  until one repeated field runs long (the events of a line, the metadata map of a plane); the rest
  of such a run is located at once: every byte equal to the field's key is a candidate start, the
  candidates' length varints are decoded together, and the run is the chain of candidates that each
  end where the next begins (followed 16 links per Python step, no decoding in Python);
- every event, stat and metadata entry of the file is then decoded level by level: the k-th field of
  all messages of one kind in one numpy pass (in chunks, so temporaries stay bounded), so the number
  of passes is the largest field count of a single message, not the number of messages.

Every varint and length is checked against its enclosing message: a mangled or truncated file raises
`WireError` with the byte offset of the first bad field found. The result is column-wise
(`SpaceColumns`: `EventColumns`, `StatColumns`, `MetadataColumns` over the whole space); `Plane`
and `Line` are views onto those columns, with per-object accessors (`Line.metadata_ids`,
`Plane.event_metadata`, ...) built on demand for small uses such as tests and the metadata plane.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
from profaudit.parsers.protowire import WireError, signed64, text, varint

_DOUBLE_OF_U64 = struct.Struct("<Q")
_DOUBLE = struct.Struct("<d")

# XStat value kinds, as stored in StatColumns.kind
KIND_NONE, KIND_DOUBLE, KIND_UINT, KIND_INT, KIND_STR, KIND_BYTES, KIND_REF = range(7)

# A run of one repeated field is located with numpy once _RUN fields of it came in a row, if they
# are small: the scan costs a pass over the bytes, worth it for many small fields, not a few big ones.
_RUN = 8
_RUN_MAX_AVG_BYTES = 4096
_WINDOW = 1 << 23  # bytes scanned for run candidates at a time (bounds the temporaries)


class Ref(int):
    """A stat value that is an id into the plane's stat metadata (its name is the string value)."""

    __slots__ = ()


def _ints(n: int = 0) -> np.ndarray:
    return np.zeros(n, np.int64)


# --------------------------------------------------------------------------------------------
# vectorised wire reading


def _first(mask: np.ndarray, positions: np.ndarray) -> int:
    """Index (into mask) of the failing entry with the lowest byte position."""
    cand = np.flatnonzero(mask)
    return int(cand[np.argmin(positions[cand])])


def _varints(a: np.ndarray, pos: np.ndarray, lim: np.ndarray, strict: bool = True):
    """The base-128 varint at every position of `pos`, each bounded by its `lim`.

    Returns (uint64 values, positions after them, ok mask); `strict` raises on the first bad one
    instead of masking it."""
    ok = pos < lim
    if not ok.all():
        if strict:
            raise WireError(int(pos[~ok].min()), "varint runs past the end of its message")
        b = a[np.where(ok, pos, 0)] if a.size else np.zeros(pos.size, np.uint8)
    else:
        b = a[pos]
    if not b.size or b.max() < 0x80:  # the usual case: every value below 128
        return b.astype(np.uint64), pos + 1, ok
    val = (b & 0x7F).astype(np.uint64)
    nxt = pos + 1
    more = np.flatnonzero((b >= 0x80) & ok)
    shift = 7
    while more.size:
        p = nxt[more]
        if shift >= 70:
            over, problem = np.ones(more.size, bool), "varint longer than 10 bytes"
        else:
            over, problem = p >= lim[more], "varint runs past the end of its message"
        if over.any():
            if strict:
                raise WireError(int(pos[more[over]].min()), problem)
            ok[more[over]] = False
            keep = ~over
            more, p = more[keep], p[keep]
            if not more.size:
                break
        b = a[p]
        val[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        nxt[more] = p + 1
        more = more[b >= 0x80]
        shift += 7
    return val, nxt, ok


def _fixed(a: np.ndarray, pos: np.ndarray, nbytes: int) -> np.ndarray:
    raw = np.ascontiguousarray(a[pos[:, None] + np.arange(nbytes)])
    return raw.view("<u8" if nbytes == 8 else "<u4").ravel().astype(np.uint64)


# one-byte keys (field numbers 1-15) that are well formed: wire types 0, 1, 2, 5
_GOOD_KEY = np.array([b >> 3 != 0 and b & 7 in (0, 1, 2, 5) and b < 0x80 for b in range(256)])


def _lut(table: np.ndarray, key: np.ndarray) -> np.ndarray:
    """table[key] for one-byte keys; longer keys (field numbers above 15) read table[255]."""
    return table[key] if key.dtype == np.uint8 else table[np.minimum(key, 255)]


def _scan(a: np.ndarray, starts: np.ndarray, ends: np.ndarray):
    """Decode many messages of one kind together, one field of each per step.

    Yields (message index, key, value, payload start, payload end) arrays for the k-th field of
    every message that has one, k = 0, 1, ...; so within one message fields come in file order and
    "last one wins" is a plain assignment per step. `key` is (field number << 3 | wire type): uint8
    when every key of the step is one byte. Varints come back as uint64, fixed64/fixed32 as raw
    uint64, length-delimited fields as their payload span (value = length)."""
    idx = np.flatnonzero(starts < ends)
    c = starts[idx]
    e = ends[idx]
    while idx.size:
        kpos = c
        key = a[c]
        if key.max() < 0x80:
            c = c + 1
            good = _GOOD_KEY[key].all()
        else:
            key, c, _ = _varints(a, c, e)
            key = key.astype(np.int64)
            good = False
        if not good:
            fno, wt = key >> 3, key & 7
            bad = fno == 0
            if bad.any():
                raise WireError(int(kpos[bad].min()), "field number 0")
            bad = (wt == 3) | (wt == 4) | (wt > 5)
            if bad.any():
                j = _first(bad, kpos)
                raise WireError(int(kpos[j]), f"wire type {wt[j]} (field {fno[j]}) is not valid here")
        wt = key & 7
        odd = wt & 1
        if not odd.any():  # only varints and length-delimited fields: one varint read for all
            val, c, _ = _varints(a, c, e)
            m = np.flatnonzero(wt == 2)
        else:
            val = np.zeros(idx.size, np.uint64)
            m = np.flatnonzero(odd == 0)
            if m.size:
                val[m], c[m], _ = _varints(a, c[m], e[m])
            m = m[wt[m] == 2]
            for w, nb, what in ((1, 8, "fixed64"), (5, 4, "fixed32")):
                f = np.flatnonzero(wt == w)
                if f.size:
                    over = c[f] + nb > e[f]
                    if over.any():
                        raise WireError(int(c[f][over].min()), f"{what} runs past the end of its message")
                    val[f] = _fixed(a, c[f], nb)
                    c[f] += nb
        vs = c
        if m.size:
            n = val[m]
            room = (e[m] - c[m]).astype(np.uint64)
            over = n > room
            if over.any():
                j = _first(over, c[m])
                raise WireError(int(c[m][j]), f"field {int(key[m][j]) >> 3} claims {n[j]} bytes but only {room[j]} remain")
            c = c.copy()
            c[m] += n.astype(np.int64)
        yield idx, key, val, vs, c
        keep = c < e
        if not keep.all():
            idx, c, e = idx[keep], c[keep], e[keep]


_STRIDE = 16  # chain steps taken per Python step in _run


def _run(a: np.ndarray, pos: int, end: int, key: int):
    """The payload spans of the run of `key` fields starting at `pos` (a one-byte length-delimited
    key), and the position after the run; None when the field at `pos` itself is malformed.

    Every byte equal to `key` is a candidate field start; each candidate's length gives the next
    position, and the run is the chain of candidates from `pos`. The chain is followed _STRIDE
    links per Python step (the link table raised to that power by repeated squaring), and the
    links in between are filled in with numpy."""
    out_s: list[np.ndarray] = []
    out_e: list[np.ndarray] = []
    while True:
        w_end = min(end, pos + _WINDOW)
        cand = np.flatnonzero(a[pos:w_end] == key) + pos
        k = cand.size
        n, q, ok = _varints(a, cand + 1, np.full(k, end, np.int64), strict=False)
        ok &= n <= np.maximum(end - q, 0).astype(np.uint64)
        nxt = q + np.where(ok, n, 0).astype(np.int64)
        if not ok[0]:
            return None if not out_s else (np.concatenate(out_s), np.concatenate(out_e), pos)
        # link[i]: the candidate where field i's successor starts, if well formed; k = the run stops
        j = np.minimum(np.searchsorted(cand, nxt), k - 1)
        link = np.append(np.where(ok & (cand[j] == nxt), j, k), k)
        link[:k][~np.append(ok, False)[link[:k]]] = k
        far = link
        for _ in range(_STRIDE.bit_length() - 1):
            far = far[far]
        anchors = [0]
        i = 0
        while (i := int(far[i])) != k:
            anchors.append(i)
        tail = [anchors[-1]]
        while (i := int(link[tail[-1]])) != k:
            tail.append(i)
        block = np.empty((len(anchors) - 1, _STRIDE), np.int64)
        if block.size:
            block[:, 0] = anchors[:-1]
            for c in range(1, _STRIDE):
                block[:, c] = link[block[:, c - 1]]
        sel = np.concatenate([block.ravel(), np.array(tail, np.int64)])
        out_s.append(q[sel])
        out_e.append(nxt[sel])
        pos = int(nxt[sel[-1]])
        # the chain left the window: carry on in the next one if the run goes on there
        if pos < w_end or pos >= end or a[pos] != key:
            return np.concatenate(out_s), np.concatenate(out_e), pos


def _walk(buf: bytes, a: np.ndarray, s: int, e: int) -> tuple[dict[int, int], dict[int, tuple[np.ndarray, np.ndarray]]]:
    """Fields of one big message: the last varint per field number, and every length-delimited
    field's payload span per field number (in file order). Fixed-width fields are skipped."""
    ints: dict[int, int] = {}
    pieces: dict[int, list] = {}
    pos = s
    last_key = -1
    streak = streak_start = 0
    while pos < e:
        key, p = varint(buf, pos, e)
        fno, wt = key >> 3, key & 7
        if fno == 0:
            raise WireError(pos, "field number 0")
        if wt == 2:
            if key == last_key:
                streak += 1
                if streak >= _RUN and key < 0x80 and pos - streak_start < streak * _RUN_MAX_AVG_BYTES:
                    run = _run(a, pos, e, key)
                    if run is not None:
                        rs, re_, pos = run
                        pieces[fno].append((rs, re_))
                        last_key = -1
                        continue
            else:
                last_key, streak, streak_start = key, 1, pos
            n, p = varint(buf, p, e)
            if n > e - p:
                raise WireError(p, f"field {fno} claims {n} bytes but only {e - p} remain")
            pieces.setdefault(fno, []).append((p, p + n))
            pos = p + n
            continue
        last_key = -1
        if wt == 0:
            ints[fno], pos = varint(buf, p, e)
        elif wt == 1 or wt == 5:
            pos = p + (8 if wt == 1 else 4)
            if pos > e:
                raise WireError(p, f"fixed{64 if wt == 1 else 32} runs past the end of its message")
        else:
            raise WireError(pos, f"wire type {wt} (field {fno}) is not valid here")
    return ints, {f: _spans(pl) for f, pl in pieces.items()}


def _spans(pieces: list) -> tuple[np.ndarray, np.ndarray]:
    ss: list[np.ndarray] = []
    es: list[np.ndarray] = []
    small_s: list[int] = []
    small_e: list[int] = []
    for x, y in pieces:
        if isinstance(x, np.ndarray):
            if small_s:
                ss.append(np.array(small_s, np.int64))
                es.append(np.array(small_e, np.int64))
                small_s, small_e = [], []
            ss.append(x)
            es.append(y)
        else:
            small_s.append(x)
            small_e.append(y)
    if small_s:
        ss.append(np.array(small_s, np.int64))
        es.append(np.array(small_e, np.int64))
    return np.concatenate(ss), np.concatenate(es)


def _cat(spans: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if not spans:
        return _ints(), _ints()
    return np.concatenate([s for s, _ in spans]), np.concatenate([e for _, e in spans])


def _by_owner(owner: list, *cols: list) -> tuple[np.ndarray, ...]:
    """Concatenate per-step pieces and order them by owner, keeping file order within an owner."""
    if not owner:
        return (_ints(),) * (1 + len(cols))
    o = np.concatenate(owner)
    order = np.argsort(o, kind="stable")
    return (o[order],) + tuple(np.concatenate(c)[order] for c in cols)


# --------------------------------------------------------------------------------------------
# columns


@dataclass
class StatColumns:
    """XStat rows. Within one owner, rows are in file order (a later row of the same stat wins)."""

    owner: np.ndarray = field(default_factory=_ints)  # index of the event / metadata row that holds it
    metadata_id: np.ndarray = field(default_factory=_ints)
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # KIND_*
    raw: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))  # double bits / uint / int / ref id / str and bytes length
    start: np.ndarray = field(default_factory=_ints)  # where a str/bytes payload starts

    def __len__(self) -> int:
        return len(self.owner)

    @staticmethod
    def concat(parts: list[StatColumns]) -> StatColumns:
        """One StatColumns from many; empties `parts` column by column as it goes, so the copy
        never holds more than one column twice."""
        if len(parts) <= 1:
            return parts.pop() if parts else StatColumns()
        out = StatColumns()
        for f in ("owner", "metadata_id", "kind", "raw", "start"):
            setattr(out, f, np.concatenate([getattr(p, f) for p in parts]))
            for p in parts:
                setattr(p, f, None)
        parts.clear()
        return out


def payload_end(kind: np.ndarray, raw: np.ndarray, start: np.ndarray) -> np.ndarray:
    """End of each str/bytes stat's payload (its start elsewhere)."""
    return np.where((kind == KIND_STR) | (kind == KIND_BYTES), start + raw.view(np.int64), start)


@dataclass
class EventColumns:
    """Every XEvent of the space in file order (plane, line, event)."""

    line: np.ndarray = field(default_factory=_ints)  # index into XSpace.lines
    metadata_id: np.ndarray = field(default_factory=_ints)
    offset_ps: np.ndarray = field(default_factory=_ints)  # 0 where absent (proto3 default)
    duration_ps: np.ndarray = field(default_factory=_ints)
    aggregated: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # num_occurrences, no offset

    def __len__(self) -> int:
        return len(self.line)


@dataclass
class MetadataColumns:
    """XEventMetadata map entries in file order (a later entry with the same key replaces an earlier one)."""

    plane: np.ndarray = field(default_factory=_ints)
    key: np.ndarray = field(default_factory=_ints)  # the map key (the id events refer to)
    id: np.ndarray = field(default_factory=_ints)  # the id field inside the value
    name: tuple = field(default_factory=lambda: (_ints(), _ints()))  # payload spans
    display_name: tuple = field(default_factory=lambda: (_ints(), _ints()))
    metadata: tuple = field(default_factory=lambda: (_ints(), _ints()))
    child_ids: tuple = field(default_factory=lambda: (_ints(), _ints(), _ints(), _ints(), _ints()))  # owner, wire type, value, span

    def __len__(self) -> int:
        return len(self.key)


_CHUNK = 1 << 18  # messages decoded in one pass: bounds the temporaries on large files


def _chunks(n: int):
    return ((lo, min(n, lo + _CHUNK)) for lo in range(0, n, _CHUNK))


def _decode_events(a: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[EventColumns, StatColumns]:
    """Events, and their stats decoded as each step of the event scan finds them (so the stats of
    one event are in file order, stats of different events interleaved)."""
    n = s.size
    mid = np.zeros(n, np.uint64)
    off = np.zeros(n, np.uint64)
    dur = np.zeros(n, np.uint64)
    has_off = np.zeros(n, bool)
    has_occ = np.zeros(n, bool)
    stats: list[StatColumns] = []
    for lo, hi in _chunks(n):
        for idx, key, val, vs, ve in _scan(a, s[lo:hi], e[lo:hi]):
            idx = idx + lo
            m = key == 0x22  # stats
            if m.any():
                stats.append(_decode_stats(a, idx[m], vs[m], ve[m]))
                if m.all():
                    continue
            for k, arr in ((0x08, mid), (0x10, off), (0x18, dur)):
                m = key == k
                if m.any():
                    arr[idx[m]] = val[m]
                    if k == 0x10:
                        has_off[idx[m]] = True
            has_occ[idx[key == 0x28]] = True
    cols = EventColumns(_ints(n), mid.view(np.int64), off.view(np.int64), dur.view(np.int64), has_occ & ~has_off)
    return cols, StatColumns.concat(stats)


# XStat value field key -> kind
_STAT_KIND = np.zeros(256, np.uint8)
for _k, _v in ((0x11, KIND_DOUBLE), (0x18, KIND_UINT), (0x20, KIND_INT), (0x2A, KIND_STR), (0x32, KIND_BYTES), (0x38, KIND_REF)):
    _STAT_KIND[_k] = _v


def _decode_stats(a: np.ndarray, owner: np.ndarray, s: np.ndarray, e: np.ndarray) -> StatColumns:
    n = s.size
    sid = np.zeros(n, np.uint64)
    kind = np.zeros(n, np.uint8)
    raw = np.zeros(n, np.uint64)
    start = _ints(n)
    for lo, hi in _chunks(n):
        for idx, key, val, vs, _ in _scan(a, s[lo:hi], e[lo:hi]):
            idx = idx + lo
            m = key == 0x08
            sid[idx[m]] = val[m]
            k = _lut(_STAT_KIND, key)
            m = np.flatnonzero(k)
            if m.size:
                j = idx[m]
                kind[j] = k[m]
                raw[j] = val[m]  # for str/bytes: the payload length
                start[j] = vs[m]
    return StatColumns(owner, sid.view(np.int64), kind, raw, start)


def _decode_map(a: np.ndarray, s: np.ndarray, e: np.ndarray):
    """map<int64, Message> entries: key, whether it was present, the value's span and presence."""
    n = s.size
    key = np.zeros(n, np.uint64)
    has_key = np.zeros(n, bool)
    vs_all = _ints(n)
    ve_all = _ints(n)
    has_val = np.zeros(n, bool)
    for idx, k, val, vs, ve in _scan(a, s, e):
        m = k == 0x08
        key[idx[m]] = val[m]
        has_key[idx[m]] = True
        m = k == 0x12
        vs_all[idx[m]] = vs[m]
        ve_all[idx[m]] = ve[m]
        has_val[idx[m]] = True
    return key.view(np.int64), has_key, vs_all, ve_all, has_val


def _decode_fields(a: np.ndarray, s: np.ndarray, e: np.ndarray, varints: tuple, spans: tuple, repeated: int | None = None):
    """Small messages: the last varint of each field in `varints`, the last payload span of each
    field in `spans`, and (owner, span) of every occurrence of the `repeated` length-delimited field
    (with XEventMetadata.child_id, field 6, kept raw until asked for)."""
    n = s.size
    vals = {f: np.zeros(n, np.uint64) for f in varints}
    sp = {f: (_ints(n), _ints(n)) for f in spans}
    rep_o: list = []
    rep_s: list = []
    rep_e: list = []
    child: list = [[], [], [], [], []]
    for idx, key, val, vs, ve in _scan(a, s, e):
        for f, arr in vals.items():
            m = key == (f << 3)
            arr[idx[m]] = val[m]
        for f, (ss, ee) in sp.items():
            m = key == (f << 3 | 2)
            ss[idx[m]] = vs[m]
            ee[idx[m]] = ve[m]
        if repeated is not None:
            m = key == (repeated << 3 | 2)
            if m.any():
                rep_o.append(idx[m])
                rep_s.append(vs[m])
                rep_e.append(ve[m])
            m = (key == 0x30) | (key == 0x32)
            if m.any():
                for lst, arr in zip(child, (idx[m], (key[m] & 7).astype(np.int64), val[m].view(np.int64), vs[m], ve[m])):
                    lst.append(arr)
    children = _by_owner(*child) if child[0] else (_ints(),) * 5
    return {f: v.view(np.int64) for f, v in vals.items()}, sp, _by_owner(rep_o, rep_s, rep_e), children


# --------------------------------------------------------------------------------------------
# the object views


def _value(buf: bytes, kind: int, raw: int, s: int, e: int) -> Any:
    if kind == KIND_DOUBLE:
        return _DOUBLE.unpack(_DOUBLE_OF_U64.pack(raw))[0]
    if kind == KIND_UINT:
        return raw
    if kind == KIND_INT:
        return signed64(raw)
    if kind == KIND_STR:
        return buf[s:e].decode("utf-8", errors="replace")
    if kind == KIND_BYTES:
        return bytes(buf[s:e])
    if kind == KIND_REF:
        return Ref(raw)
    return None


def _stat_list(buf: bytes, st: StatColumns, rows: np.ndarray | slice) -> list:
    kind, raw, start = st.kind[rows], st.raw[rows], st.start[rows]
    return [(m, _value(buf, k, r, s, e)) for m, k, r, s, e in zip(
        st.metadata_id[rows].tolist(), kind.tolist(), raw.tolist(), start.tolist(), payload_end(kind, raw, start).tolist())]


@dataclass
class EventMetadata:
    id: int
    name: str = ""
    display_name: str = ""
    stats: list = field(default_factory=list)  # [(stat metadata id, value)]
    child_ids: list = field(default_factory=list)
    metadata_bytes: bytes = b""


@dataclass
class Line:
    id: int = 0
    display_id: int = 0
    name: str = ""
    display_name: str = ""
    timestamp_ns: int = 0
    duration_ps: int = 0
    plane: int = 0  # index of its plane in XSpace.planes
    index: int = 0  # index in XSpace.lines (EventColumns.line)
    # this line's events are rows [first_event, end_event) of the space's EventColumns
    first_event: int = 0
    end_event: int = 0
    columns: SpaceColumns = field(default_factory=lambda: SpaceColumns(), repr=False, compare=False)

    def __len__(self) -> int:
        return self.end_event - self.first_event

    @property
    def metadata_ids(self) -> list[int]:
        return self.columns.events.metadata_id[self.first_event : self.end_event].tolist()

    @property
    def offsets_ps(self) -> list[int | None]:
        """One per event; None for aggregated events (num_occurrences instead of an offset)."""
        ev = self.columns.events
        sl = slice(self.first_event, self.end_event)
        return [None if agg else off for off, agg in zip(ev.offset_ps[sl].tolist(), ev.aggregated[sl].tolist())]

    @property
    def durations_ps(self) -> list[int]:
        return self.columns.events.duration_ps[self.first_event : self.end_event].tolist()

    @property
    def aggregated(self) -> int:
        return int(self.columns.events.aggregated[self.first_event : self.end_event].sum()) if len(self) else 0

    @property
    def stats(self) -> list[list | None]:
        """One per event: None or [(stat metadata id, value)] with refs as `Ref`."""
        st = self.columns.event_stats
        rows = np.flatnonzero((st.owner >= self.first_event) & (st.owner < self.end_event))
        rows = rows[np.argsort(st.owner[rows], kind="stable")]
        bounds = np.searchsorted(st.owner[rows], np.arange(self.first_event, self.end_event + 1)).tolist()
        return [_stat_list(self.columns.buf, st, rows[lo:hi]) or None for lo, hi in itertools.pairwise(bounds)]


@dataclass
class Plane:
    id: int = 0
    name: str = ""
    lines: list = field(default_factory=list)
    stat_names: dict = field(default_factory=dict)  # id -> name
    stat_descriptions: dict = field(default_factory=dict)
    raw_stats: list = field(default_factory=list)
    index: int = 0  # position in XSpace.planes (MetadataColumns.plane)
    columns: SpaceColumns = field(default_factory=lambda: SpaceColumns(), repr=False, compare=False)
    _event_metadata: dict | None = field(default=None, repr=False, compare=False)

    @property
    def event_metadata(self) -> dict[int, EventMetadata]:
        """id -> EventMetadata (built on first use from the space's columns)."""
        if self._event_metadata is None:
            self._event_metadata = self.columns.event_metadata_of(self.index)
        return self._event_metadata

    def resolve(self, value: Any) -> Any:
        if type(value) is Ref:
            return self.stat_names.get(int(value), f"<ref {int(value)}>")
        return value

    def named(self, raw: list | None) -> dict[str, Any]:
        """Raw (id, value) stats as {name: value} with refs resolved."""
        if not raw:
            return {}
        names = self.stat_names
        out = {}
        for mid, v in raw:
            if type(v) is Ref:
                v = names.get(int(v), f"<ref {int(v)}>")
            out[names.get(mid, f"<stat {mid}>")] = v
        return out

    @property
    def stats(self) -> dict[str, Any]:
        return self.named(self.raw_stats)

    def event_count(self) -> int:
        return sum(len(l) for l in self.lines)


@dataclass
class SpaceColumns:
    """Everything decoded column-wise from one file. Lines and planes read these, not the XSpace,
    so no reference cycle keeps a large profile in memory after its last use."""

    buf: bytes = b""
    events: EventColumns = field(default_factory=EventColumns)
    event_stats: StatColumns = field(default_factory=StatColumns)  # owner: event row
    metadata: MetadataColumns = field(default_factory=MetadataColumns)
    metadata_stats: StatColumns = field(default_factory=StatColumns)  # owner: metadata row, ordered by it

    def event_metadata_of(self, plane_index: int) -> dict[int, EventMetadata]:
        md = self.metadata
        rows = np.flatnonzero(md.plane == plane_index)
        st = self.metadata_stats
        bounds = np.searchsorted(st.owner, np.stack([rows, rows + 1])) if rows.size else np.zeros((2, 0), np.int64)
        co, cw, cv, cs, ce = md.child_ids
        cb = np.searchsorted(co, np.stack([rows, rows + 1])) if rows.size else np.zeros((2, 0), np.int64)
        buf = self.buf
        out: dict[int, EventMetadata] = {}
        for j, r in enumerate(rows.tolist()):
            children: list[int] = []
            for k in range(int(cb[0, j]), int(cb[1, j])):
                if cw[k] == 0:
                    children.append(int(cv[k]))
                else:  # packed
                    p, end = int(cs[k]), int(ce[k])
                    while p < end:
                        c, p = varint(buf, p, end)
                        children.append(signed64(c))
            out[int(md.key[r])] = EventMetadata(
                int(md.id[r]),
                buf[md.name[0][r] : md.name[1][r]].decode("utf-8", errors="replace"),
                buf[md.display_name[0][r] : md.display_name[1][r]].decode("utf-8", errors="replace"),
                _stat_list(buf, st, slice(int(bounds[0, j]), int(bounds[1, j]))),
                children,
                bytes(buf[md.metadata[0][r] : md.metadata[1][r]]),
            )
        return out




@dataclass
class XSpace:
    planes: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    hostnames: list = field(default_factory=list)
    lines: list = field(default_factory=list)  # every Line, in file order (EventColumns.line)
    columns: SpaceColumns = field(default_factory=SpaceColumns)

    @property
    def buf(self) -> bytes:
        return self.columns.buf

    @property
    def events(self) -> EventColumns:
        return self.columns.events

    @property
    def event_stats(self) -> StatColumns:
        return self.columns.event_stats

    @property
    def metadata(self) -> MetadataColumns:
        return self.columns.metadata

    @property
    def metadata_stats(self) -> StatColumns:
        return self.columns.metadata_stats

    def plane(self, name: str) -> Plane | None:
        for p in self.planes:
            if p.name == name:
                return p
        return None


def decode_xspace(buf: bytes) -> XSpace:
    """Decode a whole XSpace. Raises WireError on any structural damage."""
    a = np.frombuffer(buf, np.uint8)
    _, spans = _walk(buf, a, 0, len(buf))
    cols = SpaceColumns(buf=buf)
    space = XSpace(columns=cols)

    def texts(f: int, sp: dict = spans) -> list[str]:
        s, e = sp.get(f, (_ints(), _ints()))
        return [text(buf, (x, y)) for x, y in zip(s.tolist(), e.tolist())]

    space.errors, space.warnings, space.hostnames = texts(2), texts(3), texts(4)
    ev_spans: list = []
    md_spans: list = []
    md_plane: list = []
    smd_spans: list = []
    smd_plane: list = []
    pst_spans: list = []
    pst_plane: list = []
    n_events = 0
    for pi, (ps, pe) in enumerate(zip(*spans.get(1, (_ints(), _ints())))):
        pints, pspans = _walk(buf, a, int(ps), int(pe))
        names = texts(2, pspans)
        plane = Plane(id=signed64(pints.get(1, 0)), name=names[-1] if names else "", index=pi, columns=cols)
        for ls, le in zip(*pspans.get(3, (_ints(), _ints()))):
            lints, lspans = _walk(buf, a, int(ls), int(le))
            lnames, ldisplay = texts(2, lspans), texts(11, lspans)
            ev = lspans.get(4)
            count = 0 if ev is None else ev[0].size
            if count:
                ev_spans.append(ev)
            line = Line(
                id=signed64(lints.get(1, 0)), display_id=signed64(lints.get(10, 0)),
                name=lnames[-1] if lnames else "", display_name=ldisplay[-1] if ldisplay else "",
                timestamp_ns=signed64(lints.get(3, 0)), duration_ps=signed64(lints.get(9, 0)),
                plane=pi, index=len(space.lines), first_event=n_events, end_event=n_events + count, columns=cols)
            n_events += count
            plane.lines.append(line)
            space.lines.append(line)
        for f, dest, owners in ((4, md_spans, md_plane), (5, smd_spans, smd_plane), (6, pst_spans, pst_plane)):
            if f in pspans:
                dest.append(pspans[f])
                owners.append(np.full(pspans[f][0].size, pi, np.int64))
        space.planes.append(plane)

    # events with their stats
    es, ee = _cat(ev_spans)
    cols.events, cols.event_stats = _decode_events(a, es, ee)
    cols.events.line = np.repeat(np.arange(len(space.lines), dtype=np.int64), [len(l) for l in space.lines]) if space.lines else _ints()

    # event metadata map entries -> XEventMetadata values
    key, has_key, vs, ve, has_val = _decode_map(a, *_cat(md_spans))
    vals, sp, (md_st_owner, md_st_s, md_st_e), children = _decode_fields(a, vs, ve, (1,), (2, 3, 4), repeated=5)
    md_id = np.where(has_val, vals[1], np.where(has_key, key, 0))
    cols.metadata = MetadataColumns(
        plane=np.concatenate(md_plane) if md_plane else _ints(), key=np.where(has_key, key, md_id), id=md_id,
        name=sp[2], metadata=sp[3], display_name=sp[4], child_ids=children)

    # stat metadata: id -> name per plane (hundreds of entries, read into dicts)
    skey, shas_key, svs, sve, _ = _decode_map(a, *_cat(smd_spans))
    svals, ssp, _, _ = _decode_fields(a, svs, sve, (1,), (2, 3))
    sid = np.where(shas_key, skey, svals[1]).tolist()
    smd_owner = np.concatenate(smd_plane).tolist() if smd_plane else []
    for pi, k, ns, ne, ds, de in zip(smd_owner, sid, *(x.tolist() for x in (*ssp[2], *ssp[3]))):
        plane = space.planes[pi]
        plane.stat_names[k] = buf[ns:ne].decode("utf-8", errors="replace")
        if de > ds:
            plane.stat_descriptions[k] = buf[ds:de].decode("utf-8", errors="replace")

    # stats of metadata (ordered by owner) and planes
    cols.metadata_stats = _decode_stats(a, md_st_owner, md_st_s, md_st_e)
    plane_stats = _decode_stats(a, np.concatenate(pst_plane) if pst_plane else _ints(), *_cat(pst_spans))
    for m, pi in enumerate(plane_stats.owner.tolist()):
        space.planes[pi].raw_stats.extend(_stat_list(buf, plane_stats, slice(m, m + 1)))
    return space


def span_texts(buf: bytes, starts: np.ndarray, ends: np.ndarray) -> pl.Series:
    """The UTF-8 strings at buf[start:end] for every span, as one polars String series, without a
    Python object per string (invalid UTF-8 is replaced, as bytes.decode(errors="replace") does).

    Fields of one protobuf never overlap, so the distinct spans sorted by position, with the gaps
    between them, tile a stretch of the buffer: an Arrow binary array over the buffer itself (no
    copy) whose even elements are the spans, from which arrow's take copies the strings asked for."""
    if not starts.size:
        return pl.Series([], dtype=pl.String)
    order = np.lexsort((ends, starts))
    s, e = starts[order], ends[order]
    new = np.r_[True, (s[1:] != s[:-1]) | (e[1:] != e[:-1])]
    inverse = np.empty(starts.size, np.int64)
    inverse[order] = np.cumsum(new) - 1
    bounds = np.empty(2 * int(new.sum()), np.int64)
    bounds[0::2] = s[new]
    bounds[1::2] = e[new]
    if np.all(bounds[1:] >= bounds[:-1]):
        tiles = pa.LargeBinaryArray.from_buffers(pa.large_binary(), bounds.size - 1, [None, pa.py_buffer(bounds), pa.py_buffer(buf)])
        picked = tiles.take(pa.array(2 * inverse))
    else:  # overlapping spans (not fields of one message): copy each
        picked = pa.array([buf[x:y] for x, y in zip(starts.tolist(), ends.tolist())], pa.large_binary())
    try:
        strings = picked.cast(pa.large_string())
    except pa.ArrowInvalid:
        strings = pa.array([v.decode("utf-8", errors="replace") for v in picked.to_pylist()], pa.large_string())
    return pl.Series(strings).cast(pl.String)


_XPLANE_NAME_FIELD = 0x12  # XPlane.name, wire type 2


def sniff_xspace(head: bytes) -> bool:
    """Does `head` start like an XSpace: a planes field whose XPlane begins with an id varint and/or
    a printable name? Works on a truncated probe window (the first plane is usually far longer)."""
    if len(head) < 4 or head[0] != 0x0A:
        return False
    try:
        n, pos = varint(head, 1, len(head))
        end = min(len(head), pos + n)
        k2, p2 = varint(head, pos, end)
        if k2 == 0x08:  # XPlane.id
            _, p2 = varint(head, p2, end)
            if p2 >= end:
                return n == p2 - pos
            k2, p2 = varint(head, p2, end)
        if k2 != _XPLANE_NAME_FIELD:
            return k2 in (0x1A, 0x22, 0x2A) and n > 2
        ln, p2 = varint(head, p2, end)
        name = head[p2 : min(end, p2 + ln)]
        return 0 < ln < 4096 and all(32 <= c < 127 for c in name)
    except WireError:
        return False
