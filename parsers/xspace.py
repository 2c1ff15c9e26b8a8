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
value; refs are resolved once the whole plane is read (the maps follow the lines on disk).

Events are kept columnar per line (parallel lists), because a large profile has millions of them
and a Python object per event would cost more than the decoding itself.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from profaudit.parsers.protowire import TWO_63, TWO_64, WireError, iter_fields, signed64, text, varint

_DOUBLE_AT = struct.Struct("<d").unpack_from


class Ref(int):
    """A stat value that is an id into the plane's stat metadata (its name is the string value)."""

    __slots__ = ()


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
    # one entry per event, in file order
    metadata_ids: list = field(default_factory=list)
    offsets_ps: list = field(default_factory=list)  # None for aggregated events (num_occurrences)
    durations_ps: list = field(default_factory=list)
    stats: list = field(default_factory=list)  # None or [(stat metadata id, value)]
    aggregated: int = 0  # events that carry num_occurrences instead of an offset

    def __len__(self) -> int:
        return len(self.metadata_ids)


@dataclass
class Plane:
    id: int = 0
    name: str = ""
    lines: list = field(default_factory=list)
    event_metadata: dict = field(default_factory=dict)  # id -> EventMetadata
    stat_names: dict = field(default_factory=dict)  # id -> name
    stat_descriptions: dict = field(default_factory=dict)
    raw_stats: list = field(default_factory=list)

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
class XSpace:
    planes: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    hostnames: list = field(default_factory=list)

    def plane(self, name: str) -> Plane | None:
        for p in self.planes:
            if p.name == name:
                return p
        return None


def _stat(buf: bytes, s: int, e: int) -> tuple[int, Any]:
    mid = 0
    val: Any = None
    for f, wt, v in iter_fields(buf, s, e):
        if f == 1 and wt == 0:
            mid = v
        elif f == 2 and wt == 1:
            val = _DOUBLE_AT(struct.pack("<Q", v))[0]
        elif f == 3 and wt == 0:
            val = v
        elif f == 4 and wt == 0:
            val = signed64(v)
        elif f == 5 and wt == 2:
            val = text(buf, v)
        elif f == 6 and wt == 2:
            val = bytes(buf[v[0] : v[1]])
        elif f == 7 and wt == 0:
            val = Ref(v)
    return mid, val


def _event_metadata(buf: bytes, s: int, e: int) -> EventMetadata:
    md = EventMetadata(0)
    for f, wt, v in iter_fields(buf, s, e):
        if f == 1 and wt == 0:
            md.id = signed64(v)
        elif f == 2 and wt == 2:
            md.name = text(buf, v)
        elif f == 4 and wt == 2:
            md.display_name = text(buf, v)
        elif f == 3 and wt == 2:
            md.metadata_bytes = bytes(buf[v[0] : v[1]])
        elif f == 5 and wt == 2:
            md.stats.append(_stat(buf, *v))
        elif f == 6:
            if wt == 0:
                md.child_ids.append(signed64(v))
            elif wt == 2:  # packed
                p, end = v
                while p < end:
                    c, p = varint(buf, p, end)
                    md.child_ids.append(signed64(c))
    return md


def _map_entry(buf: bytes, s: int, e: int) -> tuple[int | None, tuple[int, int] | None]:
    key = None
    val = None
    for f, wt, v in iter_fields(buf, s, e):
        if f == 1 and wt == 0:
            key = signed64(v)
        elif f == 2 and wt == 2:
            val = v
    return key, val


def _line(buf: bytes, s: int, e: int) -> Line:
    """Decode one XLine. The event loop is written out by hand: it runs once per event."""
    ln = Line()
    md_ids = ln.metadata_ids
    offs = ln.offsets_ps
    durs = ln.durations_ps
    stats_out = ln.stats
    pos = s
    while pos < e:
        key = buf[pos]
        pos += 1
        if key >= 0x80:
            key, pos = varint(buf, pos - 1, e)
        fno = key >> 3
        wt = key & 7
        if fno == 4 and wt == 2:
            b = buf[pos]
            pos += 1
            if b < 0x80:
                n = b
            else:
                n, pos = varint(buf, pos - 1, e)
            ee = pos + n
            if ee > e:
                raise WireError(pos, f"event claims {n} bytes but its line has {e - pos} left")
            mid = 0
            off = None
            dur = 0
            occ = None
            st = None
            p = pos
            while p < ee:
                t = buf[p]
                p += 1
                if t == 0x08 or t == 0x10 or t == 0x18 or t == 0x28:
                    b = buf[p]
                    p += 1
                    if b < 0x80:
                        v = b
                    else:
                        v, p = varint(buf, p - 1, ee)
                    if t == 0x08:
                        mid = v
                    elif t == 0x10:
                        off = v - TWO_64 if v >= TWO_63 else v
                    elif t == 0x18:
                        dur = v - TWO_64 if v >= TWO_63 else v
                    else:
                        occ = v
                elif t == 0x22:
                    b = buf[p]
                    p += 1
                    if b < 0x80:
                        n2 = b
                    else:
                        n2, p = varint(buf, p - 1, ee)
                    se = p + n2
                    if se > ee:
                        raise WireError(p, f"stat claims {n2} bytes but its event has {ee - p} left")
                    smid = 0
                    sval: Any = None
                    q = p
                    while q < se:
                        t2 = buf[q]
                        q += 1
                        if t2 == 0x2A or t2 == 0x32:
                            b = buf[q]
                            q += 1
                            if b < 0x80:
                                ln2 = b
                            else:
                                ln2, q = varint(buf, q - 1, se)
                            if q + ln2 > se:
                                raise WireError(q, f"stat string claims {ln2} bytes but its stat has {se - q} left")
                            raw = buf[q : q + ln2]
                            sval = raw.decode("utf-8", errors="replace") if t2 == 0x2A else bytes(raw)
                            q += ln2
                        elif t2 == 0x11:
                            if q + 8 > se:
                                raise WireError(q, "double stat runs past its stat")
                            sval = _DOUBLE_AT(buf, q)[0]
                            q += 8
                        elif t2 == 0x08 or t2 == 0x18 or t2 == 0x20 or t2 == 0x38:
                            b = buf[q]
                            q += 1
                            if b < 0x80:
                                v = b
                            else:
                                v, q = varint(buf, q - 1, se)
                            if t2 == 0x08:
                                smid = v
                            elif t2 == 0x18:
                                sval = v
                            elif t2 == 0x20:
                                sval = v - TWO_64 if v >= TWO_63 else v
                            else:
                                sval = Ref(v)
                        else:
                            q = _skip(buf, q - 1, se)
                    if q != se:
                        raise WireError(q, "stat overruns its length")
                    if st is None:
                        st = [(smid, sval)]
                    else:
                        st.append((smid, sval))
                    p = se
                else:
                    p = _skip(buf, p - 1, ee)
            if p != ee:
                raise WireError(p, "event overruns its length")
            md_ids.append(mid)
            if occ is not None and off is None:
                ln.aggregated += 1
            if off is None and occ is None:
                off = 0  # oneof unset: proto3 default offset
            offs.append(off)
            durs.append(dur)
            stats_out.append(st)
            pos = ee
            continue
        # the few non-event fields of a line
        if wt == 0:
            v, pos = varint(buf, pos, e)
            if fno == 1:
                ln.id = signed64(v)
            elif fno == 3:
                ln.timestamp_ns = signed64(v)
            elif fno == 9:
                ln.duration_ps = signed64(v)
            elif fno == 10:
                ln.display_id = signed64(v)
        elif wt == 2:
            n, pos = varint(buf, pos, e)
            if pos + n > e:
                raise WireError(pos, f"line field {fno} claims {n} bytes but only {e - pos} remain")
            if fno == 2:
                ln.name = text(buf, (pos, pos + n))
            elif fno == 11:
                ln.display_name = text(buf, (pos, pos + n))
            pos += n
        else:
            pos = _skip(buf, pos, e, key=key)
    if pos != e:
        raise WireError(pos, "line overruns its length")
    return ln


def _skip(buf: bytes, keypos: int, end: int, key: int | None = None) -> int:
    """Skip one unknown field whose key starts at `keypos` (or whose key is given, value at keypos)."""
    if key is None:
        key, pos = varint(buf, keypos, end)
    else:
        pos = keypos
    wt = key & 7
    if wt == 0:
        _, pos = varint(buf, pos, end)
    elif wt == 1:
        pos += 8
    elif wt == 5:
        pos += 4
    elif wt == 2:
        n, pos = varint(buf, pos, end)
        pos += n
    else:
        raise WireError(keypos, f"wire type {wt} (field {key >> 3}) is not valid here")
    if pos > end:
        raise WireError(keypos, f"field {key >> 3} runs past the end of its message")
    return pos


def _plane(buf: bytes, s: int, e: int) -> Plane:
    pl = Plane()
    for f, wt, v in iter_fields(buf, s, e):
        if f == 1 and wt == 0:
            pl.id = signed64(v)
        elif f == 2 and wt == 2:
            pl.name = text(buf, v)
        elif f == 3 and wt == 2:
            pl.lines.append(_line(buf, *v))
        elif f == 4 and wt == 2:
            key, span = _map_entry(buf, *v)
            md = _event_metadata(buf, *span) if span else EventMetadata(key or 0)
            pl.event_metadata[key if key is not None else md.id] = md
        elif f == 5 and wt == 2:
            key, span = _map_entry(buf, *v)
            sid, name, desc = key or 0, "", ""
            if span:
                for f2, wt2, v2 in iter_fields(buf, *span):
                    if f2 == 1 and wt2 == 0:
                        sid = signed64(v2)
                    elif f2 == 2 and wt2 == 2:
                        name = text(buf, v2)
                    elif f2 == 3 and wt2 == 2:
                        desc = text(buf, v2)
            k = key if key is not None else sid
            pl.stat_names[k] = name
            if desc:
                pl.stat_descriptions[k] = desc
        elif f == 6 and wt == 2:
            pl.raw_stats.append(_stat(buf, *v))
    return pl


def decode_xspace(buf: bytes) -> XSpace:
    """Decode a whole XSpace. Raises WireError on any structural damage."""
    space = XSpace()
    try:
        for f, wt, v in iter_fields(buf):
            if f == 1 and wt == 2:
                space.planes.append(_plane(buf, *v))
            elif f == 2 and wt == 2:
                space.errors.append(text(buf, v))
            elif f == 3 and wt == 2:
                space.warnings.append(text(buf, v))
            elif f == 4 and wt == 2:
                space.hostnames.append(text(buf, v))
    except IndexError:
        # a hand-unrolled varint read past the buffer: the file ends inside a message
        raise WireError(len(buf), "data ends inside a message (file truncated)") from None
    return space


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
