"""Walk a Trace Event Format document in bounded memory.

A Chrome/Kineto trace is `{"traceEvents": [...], <metadata keys>}` or a bare `[...]` of events.
`TraceWalker` reads the (possibly gzipped) file in blocks and yields, in file order:

- `("meta", key, value)`: a top-level key before `traceEvents`, its value parsed with orjson;
- `("events", chunk, offset)`: `chunk` is the text of a JSON array of whole events (about two
  blocks), `offset` where its first event starts in the decompressed text;
- `("tail", text, offset)`: once the input is exhausted, the rest of the document rebuilt as a
  complete JSON text: `{"traceEvents":[<last events>], <metadata keys after the array>}` for the
  object form, `[<last events>]` for the array form. Parsing it yields the last events and the
  trailing metadata together, so the end of the array never has to be located by hand.

Only the buffer (two to three blocks) and the chunk in hand are in memory, never the document.
Chunks are cut at a `}` `,` `{"ph"` style boundary searched backwards from the end of the buffer,
which cannot lie inside a string of valid JSON (see `TraceWalker._cut`). A cut inside a nested list
of objects (not produced by any known profiler) still yields invalid JSON, which the consumer
repairs with `merge_chunks`. `split_events` cuts a chunk further the same way.
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

import orjson

from profaudit.errors import InputError
from profaudit.parsers.base import open_maybe_gzip
from profaudit.parsers.textsafe import check_orjson_room

# Small blocks keep the decoders' working sets (JSON text, parser tape, raw frame) small; the
# allocator keeps freed pages around for a while, so a smaller working set is a smaller peak.
# Each chunk (about two blocks of events) also costs a fixed amount of query planning and Python
# work in the Chrome-trace parser: 4 MiB against 2 MiB cut a 1 GB Kineto load's CPU time by a
# tenth at the same peak RSS (the parser's kept frames own their memory; see
# benchmarks/trace_load_stages.py --block-mb).
BLOCK_BYTES = 4 << 20
_WS = b" \t\r\n"
# A token of JSON structure: a whole string, an unterminated string start, a bracket, or a run of
# other bytes. Used only for the metadata values that precede the events array.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|"|[\[\]{}]|[^"\[\]{}]+', re.S)
_STRING = re.compile(rb'"((?:[^"\\]|\\.)*)"', re.S)
_SCALAR_END = re.compile(rb"[\s,\]}]")
# Keys an event object starts with in every writer seen (Kineto, XLA, rocprof, catapult samples).
_EVENT_OPEN = rb'\{\s*"(?:ph|cat|name|pid|tid|ts|dur|args)"'
_EVENT_START = re.compile(_EVENT_OPEN)
# the gap between two events: `}` `,` and an event's opening `{"key"` (see TraceWalker._cut)
_EVENT_GAP = re.compile(rb'\}\s*,\s*(?=' + _EVENT_OPEN + rb")")


def split_events(chunk: bytes, piece: int):
    """`chunk` (the JSON array text of whole events) as JSON arrays of about `piece` bytes each,
    cut between events the way `TraceWalker._cut` cuts, one at a time. A cut inside a nested list
    of objects makes an invalid piece: a piece that fails to parse means "read the chunk whole"."""
    n = len(chunk)
    if n < 2 * piece:
        yield chunk
        return
    view = memoryview(chunk)
    lo = 1  # past the chunk's "["
    while n - lo > piece + piece // 2:
        m = _EVENT_GAP.search(chunk, lo + piece)
        if m is None:
            break
        yield b"".join((b"[", view[lo : m.start() + 1], b"]"))
        lo = m.end()
    yield b"".join((b"[", view[lo:]))  # the chunk's own "]" closes the last piece


def merge_chunks(a: bytes, b: bytes) -> bytes:
    """The JSON array text of two consecutive chunks, joined at the comma the cut removed."""
    return a[:-1] + b"," + b[1:]


def unescaped_quotes(text: bytes, lo: int = 0, hi: int | None = None) -> int:
    """Number of `"` in `text[lo:hi]` not preceded by an odd run of backslashes."""
    hi = len(text) if hi is None else hi
    total = text.count(b'"', lo, hi)
    escaped, sign, k = 0, 1, 1
    while True:
        n = text.count(b"\\" * k + b'"', lo, hi)
        if not n:
            break
        escaped += sign * n
        sign, k = -sign, k + 1
    return total - escaped


class _Blocks:
    """The decompressed file in blocks; `consumed` counts the bytes handed out so far."""

    def __init__(self, path: Path, block: int):
        self.path = path
        self.block = block
        self._f = open_maybe_gzip(path)
        self.consumed = 0
        self.eof = False

    def read(self) -> bytes:
        if self.eof:
            return b""
        try:
            data = self._f.read(self.block)
        except EOFError:
            raise InputError(self.path, f"gzip stream is truncated{self._where()} (file cut short)") from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(self.path, f"corrupt gzip data{self._where()}: {exc}") from None
        except OSError as exc:
            raise InputError(self.path, f"cannot read: {exc}") from None
        if not data:
            self.eof = True
        self.consumed += len(data)
        return data

    def _where(self) -> str:
        return f" after {self.consumed / 1e6:.1f} MB of JSON" if self.consumed >= 100_000 else ""

    def close(self) -> None:
        self._f.close()


class TraceWalker:
    def __init__(self, path: Path, block: int | None = None):
        self.path = Path(path)
        self.blocks = _Blocks(self.path, block or BLOCK_BYTES)
        self.buf = b""
        self.pos = 0
        self.form: str | None = None  # "object" or "array"

    # -- buffer ------------------------------------------------------------------------------
    def offset(self, pos: int | None = None) -> int:
        """Offset in the decompressed text of buffer position `pos` (default: the cursor)."""
        return self.blocks.consumed - len(self.buf) + (self.pos if pos is None else pos)

    def _more(self) -> bool:
        data = self.blocks.read()
        if not data:
            return False
        self.buf = b"".join((memoryview(self.buf)[self.pos :], data))  # (one copy)
        self.pos = 0
        return True

    def _skip_ws(self) -> bool:
        """Advance past whitespace; False at the end of the input."""
        while True:
            b, p, n = self.buf, self.pos, len(self.buf)
            while p < n and b[p] in _WS:
                p += 1
            self.pos = p
            if p < n:
                return True
            if not self._more():
                return False

    def _peek(self) -> int:
        if not self._skip_ws():
            raise InputError(self.path, "JSON ends before the document is complete (file truncated?)")
        return self.buf[self.pos]

    def _fail(self, what: str) -> InputError:
        return InputError(self.path, f"{what} at byte {self.offset()} of the JSON text")

    # -- metadata values ---------------------------------------------------------------------
    def _value_end(self, start: int, scan: list[int]) -> int | None:
        """End of the JSON value at buffer position `start`; None when the buffer ends first.
        `scan` ([depth, offset from `start`], initially [0, 0]) is where the scan of an array or
        object stopped, for the next call after more text arrived: a value of many blocks (a
        blown-up `distributedInfo`) was scanned from its start again for each block, quadratic
        in its size (200 MB: minutes)."""
        b = self.buf
        c = b[start]
        if c == 0x22:
            m = _STRING.match(b, start)
            return m.end() if m else None
        if c not in (0x5B, 0x7B):
            m = _SCALAR_END.search(b, start)
            if m:
                return m.start()
            return len(b) if self.blocks.eof else None
        depth = scan[0]
        for m in _TOKEN.finditer(b, start + scan[1]):
            c = b[m.start()]
            # (a token may run on past the buffer's end: the next call starts at the last one)
            scan[0], scan[1] = depth, m.start() - start
            if c in (0x5B, 0x7B):
                depth += 1
            elif c in (0x5D, 0x7D):
                depth -= 1
                if depth == 0:
                    return m.end()
            elif c == 0x22 and m.end() - m.start() == 1:
                return None  # a string that continues past the buffer
        return None

    def _read_value(self):
        scan = [0, 0]
        while True:
            self._peek()
            end = self._value_end(self.pos, scan)
            if end is not None:
                check_orjson_room(self.path, end - self.pos, "top-level JSON value")
                try:
                    value = orjson.loads(self.buf[self.pos : end])
                except orjson.JSONDecodeError as exc:
                    raise self._fail(f"invalid JSON ({_msg(exc)})") from None
                self.pos = end
                return value
            if not self._more():
                raise InputError(self.path, "JSON ends before the document is complete (file truncated?)")

    def _read_key(self) -> str:
        while True:
            if self._peek() != 0x22:
                raise self._fail("expected a key string in the top-level object")
            m = _STRING.match(self.buf, self.pos)
            if m:
                try:
                    key = orjson.loads(m.group())
                except orjson.JSONDecodeError:
                    raise self._fail("invalid key string") from None
                self.pos = m.end()
                return key
            if not self._more():
                raise InputError(self.path, "JSON ends before the document is complete (file truncated?)")

    # -- the events array --------------------------------------------------------------------
    def _cut(self, strict: bool) -> int | None:
        """Buffer position of the last `,` between two whole events, or None.

        Candidates are `}` `,` `{` with only whitespace between; with `strict` the `{` must open
        with a key events start with. A strict candidate cannot lie inside a string of valid JSON:
        there every `"` follows a backslash, and the `"` after `{` here follows `{` or whitespace
        (a string ending there would be followed by the key's letters, not valid JSON either).
        A loose candidate is kept only when the text before it holds an even number of unescaped
        quotes. (Counting quotes over every chunk cost a third of the walker's time.)"""
        b, lo = self.buf, self.pos
        hi = len(b)
        for _ in range(4096):
            brace = b.rfind(b"{", lo, hi)
            if brace <= lo:
                return None
            hi = brace
            p = brace - 1
            while p > lo and b[p] in _WS:
                p -= 1
            if b[p] != 0x2C:
                continue
            q = p - 1
            while q > lo and b[q] in _WS:
                q -= 1
            if b[q] != 0x7D:
                continue
            if strict:
                if _EVENT_START.match(b, brace):
                    return p
                continue
            if unescaped_quotes(b, lo, p) % 2 == 0:
                return p
        return None

    def _chunk(self, cut: int) -> bytes:
        """The events from the cursor to `cut` as a JSON array text (one copy)."""
        return b"".join((b"[", memoryview(self.buf)[self.pos : cut], b"]"))

    def _events(self):
        block = self.blocks.block
        while True:
            if not self._skip_ws():
                break
            if self.buf[self.pos] == 0x5D and self.form == "array":
                break
            if not self.blocks.eof and len(self.buf) - self.pos < 2 * block:
                if self._more():
                    continue
                break
            if self.blocks.eof:
                break
            cut = self._cut(strict=True)
            if cut is None and len(self.buf) - self.pos > 8 * block:
                cut = self._cut(strict=False)
            if cut is None:
                if not self._more():
                    break
                continue
            yield ("events", self._chunk(cut), self.offset())
            self.pos = cut + 1
        # the input is exhausted. Hand out the bulk of what is left as an ordinary chunk; the rest
        # (the last event and whatever follows the array) becomes the tail. A cut that fell past
        # the end of the array makes an invalid chunk, which the consumer merges with the tail.
        if len(self.buf) - self.pos > (64 << 10):
            cut = self._cut(strict=True)
            if cut is not None:
                yield ("events", self._chunk(cut), self.offset())
                self.pos = cut + 1
        rest = self.buf[self.pos :]
        off = self.offset()
        self.buf, self.pos = b"", 0
        if self.form == "array":
            body = rest.rstrip()
            if not body.endswith(b"]"):
                body += b"]"  # the array form may omit its closing bracket
            yield ("tail", _drop_trailing_comma(b"[" + body), off)
        else:
            yield ("tail", _drop_trailing_comma(b'{"traceEvents":[' + rest), off)

    # -- the document ------------------------------------------------------------------------
    def __iter__(self):
        try:
            yield from self._walk()
        finally:
            self.blocks.close()

    def _walk(self):
        if not self._skip_ws():
            raise InputError(self.path, "empty JSON document")
        if self.buf.startswith(b"\xef\xbb\xbf", self.pos):
            self.pos += 3
            if not self._skip_ws():
                raise InputError(self.path, "empty JSON document")
        c = self.buf[self.pos]
        if c == 0x5B:
            self.form = "array"
            self.pos += 1
            yield from self._events()
            return
        if c != 0x7B:
            raise self._fail("not a JSON object or array")
        self.form = "object"
        self.pos += 1
        if self._peek() == 0x7D:
            return
        while True:
            key = self._read_key()
            if self._peek() != 0x3A:
                raise self._fail("expected ':' after a key")
            self.pos += 1
            if key == "traceEvents" and self._peek() == 0x5B:
                self.pos += 1
                yield from self._events()
                return
            yield ("meta", key, self._read_value())
            c = self._peek()
            if c == 0x2C:
                self.pos += 1
                continue
            if c == 0x7D:
                return
            raise self._fail("expected ',' or '}' after a top-level value")


def _drop_trailing_comma(text: bytes) -> bytes:
    """Some writers leave `,` before the array's `]`; Chrome's viewer accepts it, JSON does not.
    Only the last `,]` of the text is a candidate (the end of the events array)."""
    j = text.rfind(b"]") - 1
    if j < 0:
        return text
    while j > 0 and text[j] in _WS:
        j -= 1
    return text[:j] + text[j + 1 :] if text[j] == 0x2C else text


def _msg(exc: Exception) -> str:
    return str(exc.args[0]) if exc.args else str(exc)
