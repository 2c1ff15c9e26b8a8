"""Facts one file settles for both sides (issue 16): a wide log with a column per side was timed in
one run, on one device, with one clock, named or not, so PA201, PA106 and PA202 pass naming the
file; two separate files, or a file that itself says otherwise, never do."""

from __future__ import annotations

import random

import pytest

from profaudit.audit import audit
from profaudit.audit.claim import claim_from_paths
from profaudit.audit.evidence import SideEvidence, gather

PARITY = "PA106,PA201,PA202"


def _wide(path, columns=("Torch (ms)", "Triton (ms)"), extra="", extra_cells=""):
    """A triton perf_report-style CSV: one row per repetition, one time column per provider."""
    rng = random.Random(3)
    rows = ["N," + ",".join(columns) + extra]
    for _ in range(60):
        rows.append(f"1024,{0.100 + 0.003 * rng.random():.5f},{0.050 + 0.002 * rng.random():.5f}{extra_cells}")
    path.write_text("\n".join(rows) + "\n")
    return path


def _findings(claim):
    return {f.rule: f for f in audit(claim, select=PARITY).findings}


def _claim(b, c, columns=("Torch (ms)", "Triton (ms)"), **kw):
    return claim_from_paths(b, c, time_column=",".join(columns), baseline_variant=columns[0], candidate_variant=columns[1], **kw)


def test_one_wide_file_settles_device_clock_and_versions(tmp_path):
    log = _wide(tmp_path / "wide.csv")
    f = _findings(_claim(log, log))
    for code in ("PA201", "PA106"):
        assert f[code].status.value == "pass", f[code]
        assert f[code].message == "both sides from wide.csv: one run, one device (not named in the file), one clock (not named in the file)"
        assert f[code].evidence["shared_files"] == ["wide.csv"]
    assert f["PA202"].status.value == "pass" and f["PA202"].message.startswith("both sides from wide.csv: one run, so one driver")


def test_two_separate_files_stay_cannot_check(tmp_path):
    a = _wide(tmp_path / "a.csv")
    b = _wide(tmp_path / "b.csv")  # the same bytes, but nothing says the same machine made both
    f = _findings(_claim(a, b))
    for code in ("PA201", "PA106", "PA202"):
        assert f[code].status.value == "unknown", f[code]
    assert "shared_files" not in f["PA201"].evidence


def test_columns_named_after_different_devices_never_pass(tmp_path):
    cols = ("A100 (ms)", "H100 (ms)")
    log = _wide(tmp_path / "pasted.csv", columns=cols)
    f = _findings(_claim(log, log, columns=cols))
    assert f["PA201"].status.value == "fail" and f["PA201"].severity.label == "warn", f["PA201"]
    assert "'A100 (ms)' vs 'H100 (ms)'" in f["PA201"].message
    assert f["PA106"].status.value == "unknown" and "not one machine" in f["PA106"].message
    assert f["PA202"].status.value == "unknown"


def test_named_device_and_clock_are_named_in_the_finding(tmp_path):
    log = _wide(tmp_path / "wide.csv")
    f = _findings(_claim(log, log, device="NVIDIA H100 80GB HBM3", baseline_meta={"time_source": "do_bench"}, candidate_meta={"time_source": "do_bench"}))
    assert f["PA201"].message == "both sides from wide.csv: one run, one device NVIDIA H100 80GB HBM3, one clock do_bench"
    assert f["PA201"].status.value == "pass" and f["PA106"].status.value == "pass"


def test_one_side_naming_the_clock_names_it_for_both(tmp_path):
    log = _wide(tmp_path / "wide.csv")
    f = _findings(_claim(log, log, candidate_meta={"time_source": "do_bench"}))
    assert f["PA106"].status.value == "pass"
    assert "one clock do_bench (" in f["PA106"].message and "candidate" in f["PA106"].message


def _long(path, header, rows):
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def _long_rows(cells_for):
    rng = random.Random(5)
    out = []
    for variant, base in (("naive", 2000.0), ("fast", 1000.0)):
        out += [f"{variant},{base * (1 + 0.01 * rng.random()):.1f},{cells_for(variant)}" for _ in range(40)]
    return out


def test_a_file_recording_two_devices_fails_not_passes(tmp_path):
    log = _long(tmp_path / "merged.csv", "variant,duration_ns,device", _long_rows(lambda v: "NVIDIA A100-SXM4-80GB" if v == "naive" else "NVIDIA H100 80GB HBM3"))
    f = _findings(claim_from_paths(log, log, baseline_variant="naive", candidate_variant="fast"))
    assert f["PA201"].status.value == "fail" and f["PA201"].severity.label == "fail", f["PA201"]
    assert f["PA202"].status.value == "unknown"  # one file, two machines: versions are not settled


def test_a_log_of_two_devices_names_the_first_and_each_side_its_own(tmp_path):
    """The log's metadata names its first device on every read (it was an unordered pick), and
    a side's device is its own rows', not the file's primary device."""
    from profaudit.loader import load

    log = _long(tmp_path / "merged.csv", "variant,duration_ns,device", _long_rows(lambda v: "NVIDIA A100-SXM4-80GB" if v == "naive" else "NVIDIA H100 80GB HBM3"))
    for _ in range(3):
        md = load([str(log)]).metadata.row(0, named=True)
        assert (md["device_name"], md["device_count"]) == ("NVIDIA A100-SXM4-80GB", 2)
    ev = gather(claim_from_paths(log, log, baseline_variant="fast", candidate_variant="naive"))
    assert ev.baseline.get("device") == "NVIDIA H100 80GB HBM3" and ev.candidate.get("device") == "NVIDIA A100-SXM4-80GB"


def test_a_file_recording_two_time_sources_is_not_one_clock(tmp_path):
    log = _long(tmp_path / "mixed.csv", "variant,duration_ns,time_source", _long_rows(lambda v: "ncu" if v == "naive" else "cuda_events"))
    f = _findings(claim_from_paths(log, log, baseline_variant="naive", candidate_variant="fast"))
    assert f["PA106"].status.value == "fail", f["PA106"]
    # the device is still one run's: the time sources differ, the machine does not
    assert f["PA201"].status.value == "pass"


def test_sides_from_different_runs_of_one_log_are_not_one_run(tmp_path):
    rng = random.Random(7)
    rows = [f"naive,0,{2000 * (1 + 0.01 * rng.random()):.1f}" for _ in range(40)] + [f"fast,1,{1000 * (1 + 0.01 * rng.random()):.1f}" for _ in range(40)]
    log = _long(tmp_path / "appended.csv", "variant,run,duration_ns", rows)
    claim = claim_from_paths(log, log, baseline_variant="naive", candidate_variant="fast")
    assert gather(claim).shared_run is None
    f = _findings(claim)
    assert f["PA201"].status.value == "unknown" and f["PA106"].status.value == "unknown"


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        ({"calls_per_sample": 1, "calls_per_sample_traced": 8}, 8),  # the trace beats the log
        ({"calls_per_sample": 4}, 4),
        ({}, None),
    ],
)
def test_calls_per_sample_prefers_the_trace(facts, expected):
    se = SideEvidence("baseline", "b")
    for key, value in facts.items():
        se.add(key, value, "test", "recorded" if key.endswith("traced") else "meta")
    f = se.calls_per_sample()
    assert (f.value if f is not None else None) == expected


def test_cuda_graphs_traced_false_beats_meta_true():
    se = SideEvidence("candidate", "c")
    se.add("cuda_graphs", True, "claim", "meta")
    se.add("cuda_graphs_traced", False, "trace", "recorded")
    assert se.cuda_graphs().value is False and se.cuda_graphs().source == "trace"
