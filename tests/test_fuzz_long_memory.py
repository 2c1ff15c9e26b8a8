"""tools/fuzz_long.py measures each input's own memory: a worker's peak RSS starts again at every
input (clear_refs), a worker left holding memory is recycled, inputs whose peak rose far are printed;
and the structured mutators cannot make a size blow-up by accident (s14 confirmation run: a stacked
"donor appended whole; repeat row x1000" wrote a 193 MB CSV; the memory its worker kept, 1.7 GB at
rest, made a 9 KB input 79 rounds later peak at 2.4 GB)."""

from __future__ import annotations

import json
import platform
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz import mutators, tool_module

REPO = Path(__file__).resolve().parents[1]
LINUX_PEAK = Path("/proc/self/clear_refs").exists()


@pytest.fixture(scope="module")
def fuzz_long():
    return tool_module.load("fuzz_long")


@pytest.mark.skipif(not LINUX_PEAK, reason="needs /proc/self/clear_refs (Linux)")
def test_the_peak_starts_again_from_the_current_rss():
    # in a child: the test process's own peak is whatever the suite did before
    code = """
import json, sys
sys.path.insert(0, sys.argv[1])
from tests.fuzz.tool_module import load
fl = load("fuzz_long")
big = bytearray(300 << 20)
for i in range(0, len(big), 4096):
    big[i] = 1  # touched: resident
rss_big, peak_big = fl._rss_mb()
del big
rss_freed, peak_kept = fl._rss_mb()
assert fl._reset_peak()
rss_now, peak_now = fl._rss_mb()
print(json.dumps([rss_big, peak_big, rss_freed, peak_kept, rss_now, peak_now]))
"""
    out = subprocess.run([sys.executable, "-c", code, str(REPO)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rss_big, peak_big, rss_freed, peak_kept, rss_now, peak_now = json.loads(out.stdout)
    assert peak_big >= rss_big >= 300
    assert rss_freed < rss_big - 250 and peak_kept >= 300  # freed, but the peak remembers it
    assert peak_now < 250 and abs(peak_now - rss_now) < 20  # after the reset: from where it is now


@pytest.mark.skipif(not LINUX_PEAK, reason="needs /proc/self/clear_refs (Linux)")
def test_a_run_reports_each_inputs_peak_and_recycles_a_worker_left_high(fuzz_long, tmp_path):
    # --recycle-mb 0: every worker is over the line after its input, so each input starts in a
    # fresh worker; --rise-mb 0: every input is printed. Nothing may be lost or called a crash.
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "fuzz_long.py"), "--per-format", "2", "--formats", "asv", "--no-corpus",
                           "--workers", "1", "--seed", "5", "--after-rate", "0", "--blowup-rate", "0", "--rise-mb", "0",
                           "--recycle-mb", "0", "--out", str(out), "--scratch", str(tmp_path / "scratch")],
                          capture_output=True, text=True, timeout=240, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rises = [l for l in proc.stdout.splitlines() if l.startswith("RISE asv #")]
    recycled = [l for l in proc.stdout.splitlines() if l.startswith("RECYCLE worker 0: ")]
    assert len(rises) == 2 and len(recycled) == 2, proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total"] == 2 and summary["recycled_workers"] == 2 and summary["memory_rejudged"] == 0
    assert "crash" not in summary["counts"]["asv"]
    # the table's peak is the highest of the inputs' own peaks, as printed in their RISE lines
    peaks = [int(l.split("peak RSS ")[1].split(" MB")[0]) for l in rises]
    assert summary["peak_rss_mb"]["asv"] == max(peaks) == max(r["peak_mb"] for r in summary["rss_rises"])
    assert all(r["peak_mb"] >= r["start_mb"] for r in summary["rss_rises"])


def _row_repeats(data: bytes) -> list[mutators.Mutant]:
    """mutate_csv's row repetitions of `data` over many rng strings (the op is drawn at random)."""
    out = []
    for k in range(150):
        m = mutators.mutate_csv(data, random.Random(f"rows/{k}"))
        if m is not None and m.label.startswith("csv: repeat row"):
            out.append(m)
    return out


def test_a_repeated_csv_row_adds_at_most_the_growth_limit():
    wide = b"a,b\n1,2\n" + b"x," + b"y" * (64 << 10) + b"\n3,4\n"  # one row of 64 KB (a donor's bytes)
    ms = _row_repeats(wide)
    assert ms, "no row repetition drawn"
    assert max(len(m.data) for m in ms) <= len(wide) + mutators.GROW_LIMIT + (64 << 10)
    # narrow rows still get their full repetition: the limit only bites on wide ones
    narrow = b"a,b\n1,2\n3,4\n"
    assert any(m.label.endswith("x1000") for m in _row_repeats(narrow))


def test_a_repeated_json_list_adds_at_most_the_growth_limit():
    doc = {"benchmarks": [{"name": "n" * (256 << 10)}]}
    data = json.dumps(doc).encode()
    sizes = []
    for k in range(600):
        m = mutators.mutate_json(data, random.Random(f"grow/{k}"))
        if m is not None and "repeat list" in m.label:
            sizes.append(len(m.data))
    assert sizes, "no list repetition drawn"
    assert max(sizes) <= len(data) + mutators.GROW_LIMIT + (256 << 10)


# A stand-in worker speaking fuzz_long's protocol (one JSON line with the mutant made, one with the
# verdict): the parent's decisions about memory are tested without making any input need gigabytes.
_SCRIPTED_WORKER = """
import json, sys
verdict, fresh, rss = sys.argv[1], sys.argv[2] == "fresh", json.loads(sys.argv[3])
for line in sys.stdin:
    task = json.loads(line)
    print(json.dumps({"seed": "s", "path": "", "label": f"input {task['i']}"}), flush=True)
    print(json.dumps({"verdict": verdict, "detail": f"peak RSS {rss[1]} MB" if verdict == "memory" else "refused",
                      "after": False, "cpu": 0.01, "rss": rss, "fresh": fresh}), flush=True)
    if verdict == "memory":
        break
"""


def _run_scripted(fuzz_long, monkeypatch, tmp_path, behaviours: list[tuple[str, str, list[int]]], per_format: int = 1,
                  scripts: list[str] | None = None) -> tuple[dict, str]:
    """fuzz_long's parent over scripted workers: spawn k runs behaviours[min(k, last)] (or, given
    `scripts`, the worker script scripts[min(k, last)])."""
    import contextlib
    import io
    import signal

    from tests.fuzz import harness

    tmp_path.mkdir(parents=True, exist_ok=True)
    seed_file = tmp_path / "seed.json"
    seed_file.write_text("{}")
    monkeypatch.setattr(harness, "discover_seeds", lambda *a, **k: {"asv": [harness.Seed("asv", seed_file)]})
    spawned = []
    real_spawn = fuzz_long.Worker._spawn

    def spawn(self):
        if scripts:
            self.cmd = [sys.executable, "-c", scripts[min(len(spawned), len(scripts) - 1)]]
            spawned.append("script")
        else:
            v, fresh, rss = behaviours[min(len(spawned), len(behaviours) - 1)]
            spawned.append(v)
            self.cmd = [sys.executable, "-c", _SCRIPTED_WORKER, v, fresh, json.dumps(rss)]
        real_spawn(self)

    monkeypatch.setattr(fuzz_long.Worker, "_spawn", spawn)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            fuzz_long.main(["--per-format", str(per_format), "--workers", "1", "--out", str(tmp_path / "out"), "--scratch", str(tmp_path / "scratch"),
                            "--budget-s", "60", "--report-s", "1000"])
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
    return json.loads((tmp_path / "out" / "summary.json").read_text()), out.getvalue()


def test_a_memory_verdict_from_a_worker_that_read_other_inputs_is_judged_again_fresh(fuzz_long, monkeypatch, tmp_path):
    # the first worker had read other inputs and reports 2,100 MB; the fresh one it is replaced by
    # reads the same input in 110 MB: that verdict counts, and both are printed
    summary, out = _run_scripted(fuzz_long, monkeypatch, tmp_path, [("memory", "warm", [1500, 2100, 1600]), ("rejected", "fresh", [20, 110, 110])])
    assert summary["counts"] == {"asv": {"rejected": 1}} and summary["memory_rejudged"] == 1
    assert "RERUN asv #0: peak RSS 2100 MB -- in a worker that had read other inputs; judged again in a fresh worker" in out
    assert "FINDING" not in out


def test_a_memory_verdict_from_a_fresh_worker_counts(fuzz_long, monkeypatch, tmp_path):
    # never hidden: a fresh worker over the line is a memory finding, and its worker is restarted
    summary, out = _run_scripted(fuzz_long, monkeypatch, tmp_path, [("memory", "fresh", [20, 2500, 2400]), ("rejected", "fresh", [20, 110, 110])], per_format=2)
    assert summary["counts"] == {"asv": {"memory": 1, "rejected": 1}} and summary["memory_rejudged"] == 0
    assert "FINDING asv #0 memory" in out and "RERUN" not in out
    assert summary["rss_rises"][0] == {"format": "asv", "i": 0, "start_mb": 20, "peak_mb": 2500, "end_mb": 2400, "label": "input 0"}


def test_a_worker_left_high_at_rest_is_recycled(fuzz_long, monkeypatch, tmp_path):
    # a verdict under the line, but the worker keeps 1,200 MB (over --recycle-mb 1024): the next
    # input goes to a fresh worker
    summary, out = _run_scripted(fuzz_long, monkeypatch, tmp_path, [("rejected", "warm", [900, 1300, 1200]), ("rejected", "fresh", [20, 110, 110])], per_format=2)
    assert summary["counts"] == {"asv": {"rejected": 2}} and summary["recycled_workers"] == 1, out
    assert "RECYCLE worker 0: 1200 MB at rest after asv #0" in out


# Gives a verdict on its first input and aborts (SIGABRT) on the next: a worker that read another
# input before dying as an allocation past its address-space cap makes it die.
_ABORTS_ON_SECOND = """
import json, os, sys
for n, line in enumerate(sys.stdin):
    task = json.loads(line)
    print(json.dumps({"seed": "s", "path": "", "label": f"input {task['i']}"}), flush=True)
    if n == 1:
        print("memory allocation of 228039952 bytes failed", file=sys.stderr, flush=True)
        os.abort()
    print(json.dumps({"verdict": "rejected", "detail": "refused", "after": False, "cpu": 0.01, "rss": [20, 110, 110], "fresh": n == 0}), flush=True)
"""
_REJECTS = _SCRIPTED_WORKER.replace('sys.argv[1], sys.argv[2] == "fresh", json.loads(sys.argv[3])', '"rejected", True, [20, 110, 110]')
_ABORTS_AT_ONCE = """
import json, os, sys
for line in sys.stdin:
    task = json.loads(line)
    print(json.dumps({"seed": "s", "path": "", "label": f"input {task['i']}"}), flush=True)
    os.abort()
"""


def test_an_abort_in_a_worker_that_read_other_inputs_is_judged_again_fresh(fuzz_long, monkeypatch, tmp_path):
    # s17 seed 3103, rocprofv3-csv #417: a 200 MB kernel trace (1.6 GB RSS, 4.5 GB of address
    # space) aborted a worker that had read other inputs; alone in a fresh worker it reads
    summary, out = _run_scripted(fuzz_long, monkeypatch, tmp_path, [], per_format=2, scripts=[_ABORTS_ON_SECOND, _REJECTS])
    assert summary["counts"] == {"asv": {"rejected": 2}} and summary["aborts_rejudged"] == 1, out
    assert ("RERUN asv #1: worker aborted (exit -6: memory allocation of 228039952 bytes failed) after 1 other input(s); "
            "judged again in a fresh worker") in out
    assert "FINDING" not in out


def test_an_abort_judged_again_is_a_crash_when_it_aborts_again(fuzz_long, monkeypatch, tmp_path):
    summary, out = _run_scripted(fuzz_long, monkeypatch, tmp_path, [], per_format=2, scripts=[_ABORTS_ON_SECOND, _ABORTS_AT_ONCE])
    assert summary["counts"] == {"asv": {"rejected": 1, "crash": 1}} and summary["aborts_rejudged"] == 1, out
    assert "FINDING asv #1 crash" in out


def test_an_abort_in_a_fresh_worker_is_a_crash(fuzz_long, monkeypatch, tmp_path):
    # never hidden: a worker that read nothing before has no kept memory to blame
    summary, out = _run_scripted(fuzz_long, monkeypatch, tmp_path, [], per_format=1, scripts=[_ABORTS_AT_ONCE])
    assert summary["counts"] == {"asv": {"crash": 1}} and summary["aborts_rejudged"] == 0, out
    assert "RERUN" not in out


def test_an_abort_that_was_no_failed_allocation_is_a_crash_at_once(fuzz_long, monkeypatch, tmp_path):
    # review E17-8: glibc's heap-corruption checks abort too, and there the input before may be the
    # cause: not judged again (alone it would read), a crash with what the worker said
    corrupt = _ABORTS_ON_SECOND.replace("memory allocation of 228039952 bytes failed", "double free or corruption (out)")
    summary, out = _run_scripted(fuzz_long, monkeypatch, tmp_path, [], per_format=2, scripts=[corrupt, _REJECTS])
    assert summary["counts"] == {"asv": {"rejected": 1, "crash": 1}} and summary["aborts_rejudged"] == 0, out
    assert "RERUN" not in out and "FINDING asv #1 crash" in out and "double free or corruption (out)" in out


# Aborts on its second input with nothing on stderr, as polars 2.1's CSV reader threads do when an
# allocation fails under the worker's address-space cap (rust_oom -> abort, no message).
_ABORTS_SILENTLY_ON_SECOND = _ABORTS_ON_SECOND.replace('        print("memory allocation of 228039952 bytes failed", file=sys.stderr, flush=True)\n', "")


def test_an_abort_that_said_nothing_in_a_worker_that_read_other_inputs_is_judged_again_fresh(fuzz_long, monkeypatch, tmp_path):
    # s19, the open #977 of s18 (seed 3114): a 210 MB nvprof trace aborted a worker that had read
    # other inputs, exit -6 and an empty stderr; alone under the same cap it read
    assert "memory allocation" not in _ABORTS_SILENTLY_ON_SECOND
    summary, out = _run_scripted(fuzz_long, monkeypatch, tmp_path, [], per_format=2, scripts=[_ABORTS_SILENTLY_ON_SECOND, _REJECTS])
    assert summary["counts"] == {"asv": {"rejected": 2}} and summary["aborts_rejudged"] == 1, out
    assert "RERUN asv #1: worker aborted (exit -6: nothing on stderr) after 1 other input(s); judged again in a fresh worker" in out
    assert "FINDING" not in out


def test_an_abort_that_said_nothing_is_a_crash_when_it_aborts_again_fresh(fuzz_long, monkeypatch, tmp_path):
    summary, out = _run_scripted(fuzz_long, monkeypatch, tmp_path, [], per_format=2, scripts=[_ABORTS_SILENTLY_ON_SECOND, _ABORTS_AT_ONCE])
    assert summary["counts"] == {"asv": {"rejected": 1, "crash": 1}} and summary["aborts_rejudged"] == 1, out
    assert "FINDING asv #1 crash: input 1 -> worker died (exit -6)" in out


# A real heap corruption on the second input: glibc aborts and says so (on stderr, which the run's
# workers are told to use: LIBC_FATAL_STDERR_), so it is a crash at once, never taken for an
# allocation that failed in silence.
_DOUBLE_FREE_ON_SECOND = _ABORTS_SILENTLY_ON_SECOND.replace(
    "        os.abort()",
    "        import ctypes\n"
    "        libc = ctypes.CDLL(None)\n"
    "        libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]\n"
    "        p = libc.malloc(32)\n"
    "        libc.free(p)\n"
    "        libc.free(p)\n"
    "        os.abort()  # a libc that did not notice")


def _glibc_catches_double_free() -> bool:
    # tcache's double-free check came with glibc 2.29: 2.26-2.28 let a 32-byte chunk's second free pass
    libc, version = platform.libc_ver()
    try:
        return libc == "glibc" and tuple(int(x) for x in version.split(".")[:2]) >= (2, 29)
    except ValueError:
        return False


@pytest.mark.skipif(not _glibc_catches_double_free(), reason="glibc >= 2.29's double-free check")
def test_a_heap_corruption_in_a_worker_that_read_other_inputs_is_a_crash_at_once(fuzz_long, monkeypatch, tmp_path):
    summary, out = _run_scripted(fuzz_long, monkeypatch, tmp_path, [], per_format=2, scripts=[_DOUBLE_FREE_ON_SECOND, _REJECTS])
    assert summary["counts"] == {"asv": {"rejected": 1, "crash": 1}} and summary["aborts_rejudged"] == 0, out
    # tcache says "free(): double free detected in tcache 2", the fastbins (tcache off through
    # GLIBC_TUNABLES) "double free or corruption (fasttop)": glibc's line either way
    assert "RERUN" not in out and "FINDING asv #1 crash: input 1 -> worker died (exit -6): " in out and "double free" in out
