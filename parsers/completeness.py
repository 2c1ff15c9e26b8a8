"""Completeness facts: a profile that cannot be proven whole says so.

A parser (or the loader, for the line-based text formats below) that sees its input may be cut
short calls `mark_incomplete`: the profile keeps what was read, its metadata gets
`complete: false` and an `incomplete_reason`, and the CLI prints the reason as a warning on
stderr (profaudit.cli.common.report_loaded). Nothing incomplete is presented as whole.

Line-based text formats: every tool that writes them ends the last line with a newline (every
corpus file does). A file whose last line has none was cut inside that line -- its last row may
hold a shortened number -- unless the text ends a JSON document (a JSON writer need not add a
newline, and a cut JSON document does not parse). JSON Lines are not one document: a last line
that is a whole record after other records, with no newline, was cut right after that record.
gzip files carry their own length and CRC.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# parsers whose files are lines of text (CSV, TSV, Markdown, console tables, JSON Lines)
LINE_FORMATS = frozenset({
    "ncu-csv", "nvbench", "profaudit-timing", "google-benchmark", "nvprof-csv", "nsys-stats-csv", "timing-table",
})
# enough of the end of a file to hold its last line (a JSON Lines record is a few hundred bytes)
_TAIL = 1 << 16
# the reason given for a file cut inside its last line
CUT_LAST_LINE = "the last line has no line end: the file was probably cut short (its last row may be partial)"


def mark_incomplete(metadata: dict[str, Any], reason: str) -> None:
    """Record that the profile may be missing data (the first reason is kept, later ones appended)."""
    metadata["complete"] = False
    prev = metadata.get("incomplete_reason")
    metadata["incomplete_reason"] = f"{prev}; {reason}" if prev and reason not in prev else (prev or reason)


def _gzip_tail(fh) -> tuple[bytes, bytes] | None:
    """The first 64 and the last _TAIL bytes of a gzip file's text (every member), or None when the stream is
    damaged (the reader reports that itself). A text file cut mid-line and then compressed has a
    whole gzip stream: only its text shows the cut (fuzzing: a gzipped rocprofv3 CSV cut inside
    its last row loaded as whole). Costs one more decompression of the file, in 1 MiB steps."""
    import zlib

    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    tail = head = b""
    try:
        while chunk := fh.read(1 << 20):
            while chunk:
                out = d.decompress(chunk)
                if out:
                    head = head or out[:64]
                    tail = (tail + out)[-_TAIL:]
                chunk = d.unused_data  # the next member of a multi-member file
                if chunk:
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    except zlib.error:
        return None
    return head, tail


def unterminated_last_line(path: Path) -> bool:
    """Whether a text file (plain or gzip) ends inside a line that is not the end of a JSON document."""
    try:
        size = os.path.getsize(path)
        if size == 0:
            return False
        with open(path, "rb") as fh:
            head = fh.read(64)
            if head[:2] == b"\x1f\x8b":
                fh.seek(0)
                ends = _gzip_tail(fh)
                if ends is None:
                    return False
                head, tail = ends
            else:
                fh.seek(max(0, size - _TAIL))
                tail = fh.read()
    except OSError:
        return False
    if not tail:
        return False
    if tail.endswith(b"\n"):
        return False
    if tail.endswith(b"\r"):
        # a file whose lines end in \r\n, ending in a lone \r, was cut between the two (the rows
        # after it are gone); a lone \r ends lines only in old Mac text
        return b"\r\n" in tail
    end = tail.rstrip()
    # only a file that is JSON may end in its closing bracket without a newline: a text line that
    # happens to end in "]" ("Processing [report.sqlite] with [.../cuda_gpu_kern_sum.py]" of an
    # nsys stats export, fuzzing) is still a cut line
    if not end.endswith((b"}", b"]")) or head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] not in (b"{", b"["):
        return True
    # a JSON document may end without a newline; JSON Lines (a whole {...} record as the last line,
    # after a line that also ends a record) may not: every writer ends each record with one
    before, nl, last = end.rpartition(b"\n")
    return bool(nl) and last.lstrip().startswith(b"{") and last.endswith(b"}") and before.rstrip().endswith(b"}")


def check_read(path: Path, parser, profiles: list) -> None:
    """The loader's check after a parser's read: line-based files cut inside their last line."""
    if getattr(parser, "name", None) not in LINE_FORMATS or not Path(path).is_file():
        return
    if unterminated_last_line(Path(path)):
        for p in profiles:
            mark_incomplete(p.metadata, CUT_LAST_LINE)
