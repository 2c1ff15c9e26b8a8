"""Size blow-ups, one per format: a valid record of the smallest seed repeated until the file is
--size-mb (tests/fuzz/mutators.py `blowup`), each read in a fresh process the way the fuzz verdict
reads (read_one, every table, ps.metadata). Prints the verdict, CPU seconds and peak RSS of each
read, and flags those beyond --mem-mb or --timeout (CPU seconds): an input this size must load
within those bounds or be refused in one line.

    nice -n 10 .venv/bin/python tools/fuzz_blowup.py --size-mb 50

The long run mixes blow-ups in with --blowup-rate; this sweep gives each format one, with its
cost, which a rare random pick cannot. SQLite and binary formats are skipped (their blow-ups are
row repetition, in the long run's SQLite mutator). A folder format is blown up in a copy of its
seed folder, in the biggest table file the format reads (Parquet tables by rows, repeated and
written uncompressed; `blowup_folder`); a folder whose only data is binary (a JAX run's
xplane.pb) is listed as skipped.

With --after, each blow-up that loads also goes through every command the long run's after-load
stage runs on a loaded input (tests/fuzz/downstream.py `commands`, both forms of compare, ranks
and collectives, and the ingest round trip), each in a fresh process that reads the file and then
runs that one command, as a user's `profaudit CMD FILE` does. The line of each command gives the
CPU seconds of the read and of the command, and the process's peak RSS (read and command
together); a command past --mem-mb or --after-timeout (read and command CPU together) is OVER:

    nice -n 10 .venv/bin/python tools/fuzz_blowup.py --size-mb 200 --per-format 3 --after
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def peak_rss_mb() -> int:
    """This process's own peak RSS. Not ru_maxrss: Linux keeps it across execve, so a child
    spawned by a parent holding the 200 MB mutant (several copies of it) started at the parent's
    peak (an 850 MB floor under every read in the session-14 logs). VmHWM belongs to the address
    space, which exec replaces."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def _blowup_parquet(data: bytes, target: int) -> tuple[bytes, str] | None:
    """A Parquet table's rows repeated until they hold `target` bytes, written without compression
    or dictionaries: a file's size then stands for its rows as a text file's does (repeated rows
    compressed with their dictionaries would make a 200 MB file of billions of rows)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(io.BytesIO(data))
    except (OSError, ValueError, pa.ArrowException):
        return None
    if not table.num_rows:
        return None
    def written(rows: int) -> bytes:
        big = table
        while big.num_rows < rows:  # doubling: a few concatenations, not one per copy
            big = pa.concat_tables([big, big]).combine_chunks()
        buf = io.BytesIO()
        pq.write_table(big.slice(0, rows), buf, compression="none", use_dictionary=False)
        return buf.getvalue()

    # rows from the in-memory size first, then once more from the bytes that gave (Parquet's plain
    # encoding differs from Arrow's buffers by a few tens of percent, both ways)
    rows = max(1, target // max(1, table.nbytes // table.num_rows))
    data = written(rows)
    if len(data) < target:
        rows = -(-rows * target // len(data))
        data = written(rows)
    return data, f"blow-up: {table.num_rows} rows repeated to {rows}"


def _blowup_file(data: bytes, name: str, target: int, rng: random.Random) -> tuple[bytes, str, int] | None:
    """The blown-up bytes of one file of a folder, what was done and its size decompressed (what
    --size-mb asks for and the sweep prints, as for a file format), or None when its kind has no
    blow-up here (binary protobuf, SQLite: see the module docstring)."""
    from tests.fuzz import mutators

    if name.endswith(".parquet"):
        made = _blowup_parquet(data, target)
        return None if made is None else (*made, len(made[0]))
    inner, how = mutators._wrap(data)
    m = mutators.blowup(inner, rng, target)
    return None if m is None else (mutators._rewrap(m.data, how), m.label, len(m.data))


def blowup_folder(seed: Path, fmt: str, dest: Path, target: int, rng: random.Random) -> tuple[Path, Path, str, int] | None:
    """A copy of the folder `seed` under `dest` whose biggest table file (of the files its format
    reads; Parquet by rows) is blown up to about `target` bytes: (the copy, the file, what was
    done, its size decompressed), or None when none of its files can be blown up (the copy is
    then removed). The other files are copied unchanged, so the folder still reads as its format."""
    from tests.fuzz import harness

    out = dest / seed.name
    if out.exists():  # a kept (--keep) blow-up of an earlier run
        shutil.rmtree(out)
    shutil.copytree(seed, out, symlinks=True)
    reads = harness._FOLDER_DATA_SUFFIXES + harness._FOLDER_TEXT_READ.get(fmt, ())
    files = [f for f in out.rglob("*") if f.is_file() and not f.is_symlink() and f.name.endswith(reads)]
    # a JAX run is read from its xplane.pb: a trace.json beside one is not read (harness.write_mutant)
    files = [f for f in files if not (".trace.json" in f.name and any(f.parent.glob("*.xplane.pb")))]

    def weight(f: Path) -> tuple[int, int]:
        if f.name.endswith(".parquet"):
            import pyarrow.parquet as pq

            try:
                return pq.ParquetFile(f).metadata.num_rows, f.stat().st_size
            except Exception:  # a seed's damaged part: by its size alone
                return 0, f.stat().st_size
        return 0, f.stat().st_size

    for victim in sorted(files, key=weight, reverse=True):
        blown = _blowup_file(victim.read_bytes(), victim.name, target, rng)
        if blown is not None:
            victim.write_bytes(blown[0])
            return out, victim, f"{victim.relative_to(out)}: {blown[1]}", blown[2]
    shutil.rmtree(out)
    return None


def _read_one(path: Path) -> int:
    """Child side: the verdict on `path` with its CPU seconds and peak RSS, as one JSON line."""
    from tests.fuzz.harness import verdict

    t = time.process_time()
    v, detail = verdict(path, None)
    print(json.dumps({"verdict": v, "detail": detail[:200], "cpu_s": round(time.process_time() - t, 1), "peak_rss_mb": peak_rss_mb()}))
    return 0


def _after_commands(path: Path, seed: Path, scratch: Path) -> list[list[str]]:
    """Child side: the command lines the long run's after stage runs on `path` once loaded, every
    form of them (each input of the long run runs one of two forms of compare and of the
    distributed view; this sweep runs both), plus `ingest` (the library round trip, not a CLI
    command). Printed as one JSON line."""
    from profaudit.loader import read_one
    from profaudit.profile import ProfileSet
    from tests.fuzz.downstream import commands

    ps = ProfileSet(read_one(path, explicit=True))
    seen: list[list[str]] = []
    for pick in range(4):
        for argv in commands(path, ps, seed, scratch, pick):
            if argv not in seen:
                seen.append(argv)
    return seen + [["ingest"]]


def _run_after(argv: list[str], path: Path, seed: Path, scratch: Path) -> int:
    """Child side: read `path` (and `seed`, when the command compares against it) the way the long
    run's worker does, then run one command through the CLI with the loader answered from what was
    read; print rc, the first error line, the read's and the command's CPU seconds and this
    process's peak RSS as one JSON line."""
    from profaudit.loader import read_one
    from profaudit.profile import ProfileSet
    from tests.fuzz import downstream

    from profaudit import schema

    t = time.process_time()
    ps = ProfileSet(read_one(path, explicit=True))
    # every table and the metadata built, as the long run's verdict builds them before its after stage
    for name in schema.DATA_TABLES:
        ps.table(name)
    ps.metadata
    cache = {str(path): ps}
    if str(seed) in argv:
        cache[str(seed)] = ProfileSet(read_one(seed, explicit=True))
    read_s = time.process_time() - t
    t = time.process_time()
    scratch.mkdir(parents=True, exist_ok=True)
    if argv == ["ingest"]:
        problem = downstream._ingest_round_trip(ps, scratch / "dataset")
        rc, err = (0, "") if problem is None else (3, problem)
    else:
        with downstream._loads_from(cache):
            rc, err = downstream._cli(argv)
    line = next((l for l in err.splitlines() if "error" in l), "")
    print(json.dumps({"rc": rc, "err": line[:300], "read_s": round(read_s, 1), "cmd_s": round(time.process_time() - t, 1), "peak_rss_mb": peak_rss_mb()}))
    return 0


def _child(args: list[str], timeout: float) -> dict:
    try:
        r = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=timeout)
        if r.returncode == 0 and r.stdout.strip():
            return json.loads(r.stdout.strip().splitlines()[-1])
        return {"verdict": "crash", "rc": r.returncode, "detail": r.stderr.strip()[-200:]}
    except subprocess.TimeoutExpired:
        return {"verdict": "timeout", "detail": f"no answer after {timeout:.0f} s wall"}


def _after(path: Path, seed: Path, args) -> int:
    """The after-load commands on one loaded blow-up, each in a fresh process; the number of them
    over a bound."""
    scratch = path.parent / "after"
    cmds = _child(["--list-after", str(path), "--seed-path", str(seed), "--scratch", str(scratch)], args.after_timeout * 20)
    if "commands" not in cmds:
        print(f"  {'(listing the commands)':40} OVER: {cmds.get('verdict')}: {cmds.get('detail', '')[:100]}", flush=True)
        return 1
    bad = 0
    for argv in cmds["commands"]:
        res = _child(["--run-after", json.dumps(argv), "--target", str(path), "--seed-path", str(seed), "--scratch", str(scratch)], args.after_timeout * 20)
        shown = " ".join("FILE" if a == str(path) else "SEED" if a == str(seed) else Path(a).name if "/" in a else a for a in argv)
        if "rc" in res and "peak_rss_mb" in res:
            cpu = res["read_s"] + res["cmd_s"]
            over = [w for w, hit in (("memory", res["peak_rss_mb"] > args.mem_mb), ("timeout", cpu > args.after_timeout),
                                      (f"exit {res['rc']}", res["rc"] not in (0, 1, 2, 4))) if hit]
            note = ("OVER: " + ", ".join(over) + "; " if over else "") + res["err"]
            print(f"  {shown[:40]:40} rc={res['rc']} read {res['read_s']:5.1f} s + cmd {res['cmd_s']:5.1f} s  peak {res['peak_rss_mb']:6d} MB  {note[:100]}", flush=True)
        else:
            over = [res.get("verdict", "crash")]
            print(f"  {shown[:40]:40} OVER: {over[0]}: {res.get('detail', '')[:100]}", flush=True)
        bad += bool(over)
        shutil.rmtree(scratch, ignore_errors=True)
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--size-mb", type=int, default=50)
    ap.add_argument("--mem-mb", type=int, default=2048, help="peak RSS of one read that counts as a memory blow-up")
    ap.add_argument("--timeout", type=float, default=30.0, help="CPU seconds one read may take")
    ap.add_argument("--formats", default="", help="comma-separated parser names (default: every format with a text seed)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-format", type=int, default=1, help="seeds per format, smallest first (asv's benchmarks.json or a rocprofv3 API trace is not a format's smallest)")
    ap.add_argument("--keep", type=Path, help="write each mutant under this folder and keep it (to rerun one read under /usr/bin/time or py-spy)")
    ap.add_argument("--after", action="store_true", help="run every after-load command on each blow-up that loads, each in a fresh process")
    ap.add_argument("--after-timeout", type=float, default=60.0, help="CPU seconds of one read and one after-load command together")
    ap.add_argument("--list-after", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--run-after", help=argparse.SUPPRESS)
    ap.add_argument("--target", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--seed-path", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _read_one(args.child)
    if args.list_after:
        print(json.dumps({"commands": _after_commands(args.list_after, args.seed_path, args.scratch)}))
        return 0
    if args.run_after:
        return _run_after(json.loads(args.run_after), args.target, args.seed_path, args.scratch)

    from tests.fuzz import harness, mutators

    work = Path(tempfile.mkdtemp(prefix="profaudit-blowup-"))
    bad = 0
    try:
        seeds = harness.discover_seeds(work / "seeds", max_bytes=400_000, per_format=args.per_format)
        wanted = set(args.formats.split(",")) if args.formats else None
        print(f"{'format':20} {'MB':>5} {'verdict':>12} {'CPU s':>7} {'peak MB':>8}  note")
        for fmt, seed in [(f, s) for f, ss in sorted(seeds.items()) for s in ss]:
            if wanted and fmt not in wanted:
                continue
            d = (args.keep or work / "m") / fmt
            d.mkdir(parents=True, exist_ok=True)
            if seed.is_dir:
                made = blowup_folder(seed.path, fmt, d, args.size_mb << 20, random.Random(args.seed))
                if made is None:
                    print(f"{fmt:20} {'-':>5} {'skipped':>12} {'':7} {'':8}  no file of the folder has a blow-up (binary)", flush=True)
                    continue
                path, _blown, label, size = made
                size_mb = size >> 20
            else:
                inner, how = mutators._wrap(harness._seed_bytes(seed.path))
                m = mutators.blowup(inner, random.Random(args.seed), args.size_mb << 20)
                if m is None:
                    continue
                path = d / seed.path.name
                path.write_bytes(mutators._rewrap(m.data, how))
                size_mb, label = len(m.data) >> 20, ""
            for c in seed.companions:
                shutil.copyfile(c, d / c.name)
            # a wall limit well past the CPU one: a loaded machine must not turn into a verdict
            try:
                r = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True, text=True, timeout=args.timeout * 20)
                res = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {"verdict": "crash", "detail": r.stderr.strip()[-200:]}
            except subprocess.TimeoutExpired:
                res = {"verdict": "timeout", "detail": f"no verdict after {args.timeout * 20:.0f} s wall"}
            over = [w for w, hit in (("memory", res.get("peak_rss_mb", 0) > args.mem_mb), ("timeout", res.get("cpu_s", 0) > args.timeout)) if hit]
            if res["verdict"] in ("undeliberate", "silent_partial", "crash", "timeout"):
                over.append(res["verdict"])
            bad += bool(over)
            note = ("OVER: " + ", ".join(over) + "; " if over else "") + (res.get("detail") or "")
            note = f"{seed.path.name}: {note}" if args.per_format > 1 else note
            note = f"{note}{'; ' if note else ''}{label}" if seed.is_dir else note
            print(f"{fmt:20} {size_mb:5d} {res['verdict']:>12} {res.get('cpu_s', float('nan')):7.1f} {res.get('peak_rss_mb', 0):8d}  {note[:200]}", flush=True)
            if args.after and res["verdict"] in ("ok", "incomplete"):
                bad += _after(path, seed.path, args)
            if not args.keep:
                shutil.rmtree(d)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
