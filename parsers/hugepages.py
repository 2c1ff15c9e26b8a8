"""Move a region of a process's anonymous memory onto transparent huge pages, in place (Linux).

Why: the isolation zygote (parsers/isolate.py) forks one child per `.ncu-rep` read, and its address
space holds the ~110 MB that NVIDIA's metrics library builds in its `.bss` when it is loaded
(`libnvperf_host.so`: a 124 MB zero-initialised segment filled by static constructors). On 4 KiB
pages that is ~28,000 page-table entries that every fork copies and every child's exit tears down
again (about 5 ms each way, measured in benchmarks/bench_ncu_load.py). On 2 MiB pages it is ~60
entries. The library cannot be asked to allocate differently: the loader maps the segment and runs
the constructors inside `dlopen`, before anything can `madvise` it. So each 2 MiB-aligned piece is
copied into a fresh huge-page-backed mapping at the same offset within a 2 MiB page and moved over
the original with `mremap(MREMAP_FIXED)`: same addresses, same bytes, other pages.
Where the kernel has MADV_COLLAPSE (Linux 6.1+), it does that copy itself, in place, and the
mapping stays one: each piece moved by mremap is a mapping of its own (58 more in the zygote, each
duplicated with its anon_vma by every fork and freed by every child's exit; a bare fork and exit of
a zygote holding ncu_report cost 1.40-1.55 ms of CPU with the pieces mremapped, 1.16-1.24 with them
collapsed, same huge pages). The mremap route stays for older kernels.

Only a single-threaded process may do this (the zygote is): another thread writing to a piece
between its copy and its move would lose that write. Each piece is moved on its own, so the caller
can stop between pieces (the zygote serves a read request) and go on later. Where the kernel has no
transparent huge pages (or they are switched off), nothing is done. A piece whose huge page cannot
be had (memory too fragmented) ends up on 4 KiB pages again, as before: the move never changes what
the memory holds.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from pathlib import Path
from typing import Iterator

HUGE = 2 << 20  # the x86-64 / arm64 (4 KiB granule) PMD size
_THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")
_PROT_RW = 0x1 | 0x2
_MAP_PRIVATE_ANON = 0x02 | 0x20
_MADV_HUGEPAGE = 14
_MREMAP_MAYMOVE_FIXED = 0x1 | 0x2
_MADV_COLLAPSE = 25  # Linux 6.1+; EINVAL before
_PT_LOAD = 1


def available() -> bool:
    """Whether a region marked MADV_HUGEPAGE gets huge pages here (Linux, THP not 'never')."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mode = _THP_ENABLED.read_text()
    except OSError:
        return False
    return "[never]" not in mode


def libc():
    """The C library with the memory calls typed (pointers are 64-bit: untyped, ctypes would cut
    them to C ints)."""
    lib = ctypes.CDLL(None, use_errno=True)
    lib.mmap.restype = ctypes.c_void_p
    lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    lib.mremap.restype = ctypes.c_void_p
    lib.mremap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    lib.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    return lib


def loaded_bss(lib: Path) -> tuple[int, int] | None:
    """The address range of the zero-initialised part of a loaded 64-bit little-endian ELF
    library's writable segment (its `.bss`, anonymous memory), or None when the library is not
    mapped in this process or its layout is not the expected one (then nothing is moved)."""
    real = os.path.realpath(lib)
    try:
        with open(real, "rb") as fh:
            eh = fh.read(64)
            if len(eh) < 64 or eh[:4] != b"\x7fELF" or eh[4] != 2 or eh[5] != 1:
                return None
            (phoff,) = struct.unpack_from("<Q", eh, 32)
            phentsize, phnum = struct.unpack_from("<HH", eh, 54)
            fh.seek(phoff)
            ph = fh.read(phentsize * phnum)
        base = None
        with open("/proc/self/maps") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) > 5 and parts[5] == real and int(parts[2], 16) == 0:
                    base = int(parts[0].split("-")[0], 16)
                    break
    except (OSError, ValueError, struct.error):
        return None
    if base is None or phentsize < 56 or len(ph) < phentsize * phnum:
        return None
    grown = []
    for i in range(phnum):
        p_type, _flags, _off, vaddr, _paddr, filesz, memsz, _align = struct.unpack_from("<IIQQQQQQ", ph, i * phentsize)
        if p_type == _PT_LOAD and memsz > filesz:
            grown.append((vaddr, filesz, memsz))
    if len(grown) != 1:
        return None
    vaddr, filesz, memsz = grown[0]
    page = os.sysconf("SC_PAGE_SIZE")
    lo = (base + vaddr + filesz + page - 1) & ~(page - 1)  # the file-backed page holding the tail of .data stays
    hi = (base + vaddr + memsz + page - 1) & ~(page - 1)
    return (lo, hi) if hi > lo else None


def pieces(lo: int, hi: int) -> list[int]:
    """Start addresses of the whole 2 MiB-aligned pieces inside [lo, hi) (the ragged ends cannot
    be mapped by a huge page and stay as they are)."""
    first = (lo + HUGE - 1) & ~(HUGE - 1)
    return list(range(first, hi - HUGE + 1, HUGE)) if hi - first >= HUGE else []


def move_piece(lib, at: int, min_resident: float = 0.5) -> bool:
    """Move the 2 MiB piece at `at` onto a huge page; False when it was left alone (mostly never
    touched: moving it would only add memory) or the kernel refused a step (then it is intact)."""
    vec = ctypes.create_string_buffer(HUGE // 4096)
    page = os.sysconf("SC_PAGE_SIZE")
    if page != 4096 or lib.mincore(at, HUGE, vec) != 0:
        return False
    if sum(b & 1 for b in vec.raw) < min_resident * len(vec.raw):
        return False
    if lib.madvise(at, HUGE, _MADV_COLLAPSE) == 0:
        return True  # collapsed in place (see the module's docstring)
    # an older kernel, or no huge page to be had now: copy and move (which may end on small pages)
    # a 4 MiB reservation always holds one 2 MiB-aligned piece: that is where the copy goes
    raw = lib.mmap(None, 2 * HUGE, _PROT_RW, _MAP_PRIVATE_ANON, -1, 0)
    if raw is None or raw == ctypes.c_void_p(-1).value:
        return False
    dst = (raw + HUGE - 1) & ~(HUGE - 1)
    if dst > raw:
        lib.munmap(raw, dst - raw)
    if raw + 2 * HUGE > dst + HUGE:
        lib.munmap(dst + HUGE, raw + 2 * HUGE - dst - HUGE)
    lib.madvise(dst, HUGE, _MADV_HUGEPAGE)
    ctypes.memmove(dst, at, HUGE)  # the first write faults in one 2 MiB page
    if lib.mremap(dst, HUGE, HUGE, _MREMAP_MAYMOVE_FIXED, at) != at:
        lib.munmap(dst, HUGE)  # the original was not touched
        return False
    return True


def move_onto_huge_pages(lo: int, hi: int) -> Iterator[bool]:
    """Move [lo, hi) piece by piece; yields after each piece (whether it moved), so the caller can
    stop between pieces and resume later."""
    lib = libc()
    for at in pieces(lo, hi):
        yield move_piece(lib, at)


def anon_huge_kb(pid: int | str = "self") -> int:
    """AnonHugePages of a process in KiB (0 when unknown): what a benchmark or a test checks."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0
