"""`profaudit bench run|compare|ncu` and `profaudit ncu-command`: reproducible benchmarks.

Exit codes: `bench run` 0 when every variant ran and passed its correctness checks, 1 when one
failed them or errored; `bench compare` 0 for PASS/WARN verdicts, 1 for FAIL/INCONCLUSIVE (with
--fail-on, the gate's codes of `profaudit compare`: 0 pass, 1 regression, 4 not comparable);
`bench ncu` the first non-zero ncu exit code; 2 for unusable input or a missing ncu.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import List, Optional

import typer

from profaudit.cli.compare_cmd import JUNIT_OPTION, MAX_SLOWDOWN_OPTION, SUMMARY_OPTION
from profaudit.fmt import MISSING, fmt_ns, fmt_p, fmt_speedup, fmt_x, plural

_CACHE_CHOICES = ("cold", "hot", "rotate")


def _fmt_ns(v) -> str:
    if isinstance(v, list):
        return ", ".join(fmt_ns(x) for x in v)
    return fmt_ns(v)


def _each(v) -> list:
    # one value per process-level run (a list with --processes N), else the one value
    return v if isinstance(v, list) else [v]


def _cell_samples(ve: dict) -> str:
    """'30/30' (samples / minimum), one per process, with '(short)' when under the minimum."""
    lo = ve.get("min_samples")
    parts = []
    for n in _each(ve.get("samples")):
        if n is None:
            parts.append("—")
        else:
            parts.append(f"{n}/{lo}" + (" (short)" if lo is not None and n < lo else "") if lo is not None else str(n))
    return ", ".join(parts)


def _cell_noise(ve: dict) -> str:
    """The median's relative SE against the target: '0.21% met', '1.3% NOT met', or why none."""
    target = ve.get("noise_target")
    ses, mets = _each(ve.get("rel_se_median")), _each(ve.get("noise_target_met"))
    parts = []
    for se, met in zip(ses, mets + [None] * (len(ses) - len(mets))):
        if se is None:
            parts.append(f"{MISSING} (too few samples)")
        else:
            parts.append(f"{100 * se:.2g}% " + ("met" if met else f"NOT met (target {100 * target:.2g}%)" if target else "NOT met"))
    return ", ".join(parts)


def _cell_warmup(ve: dict) -> str:
    lo = ve.get("min_warmup_calls")
    parts = []
    for steady, calls in zip(_each(ve.get("warmup_steady")), _each(ve.get("warmup_calls"))):
        if calls is None:
            parts.append("—")
            continue
        short = " (short)" if lo is not None and calls < lo else ""
        parts.append(f"{'steady' if steady else 'NOT steady'}, {calls} calls{short}")
    return ", ".join(parts)


def _order_notes(manifest: dict) -> list[str]:
    """One line per variant whose time depended on its place in the round (significant)."""
    out = []
    for c in manifest["cases"]:
        for v, ve in c["variants"].items():
            for k, eff in enumerate(_each(ve.get("order_effect"))):
                if isinstance(eff, dict) and eff.get("significant"):
                    run = f" (run {k})" if isinstance(ve.get("order_effect"), list) else ""
                    out.append(
                        f"{c['id']} {v}{run}: order effect: median {_fmt_ns(eff['after_other_median_ns'])} right after another variant's call "
                        f"vs {_fmt_ns(eff['after_self_median_ns'])} otherwise ({fmt_x(eff['ratio'])}, p={fmt_p(eff['p_value'])}): its neighbour changes its time"
                    )
    return out


bench_app = typer.Typer(name="bench", help="Run reproducible kernel benchmarks, compare variants, collect Nsight Compute reports.", no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})


@bench_app.command("run")
def run_cmd(
    file: Path = typer.Argument(..., help="Benchmark file (.py) declaring profaudit.bench.Benchmark objects."),
    output_dir: Path = typer.Option(..., "--output-dir", "-o", help="Folder for the timing logs and manifest.json."),
    pattern: Optional[str] = typer.Option(None, "-k", "--pattern", help="Only cases whose id (matmul[dtype=float32,n=256]) matches: a substring, or a glob with * and ?."),
    variant: Optional[List[str]] = typer.Option(None, "--variant", help="Only these variants (repeatable)."),
    cache: Optional[str] = typer.Option(None, "--cache", help="cold (flush the cache before each call; default on GPUs), hot (default on CPUs), or rotate (cycle input sets)."),
    min_samples: int = typer.Option(30, "--min-samples", help="Samples per variant before the noise target may stop the run."),
    max_samples: int = typer.Option(100_000, "--max-samples", help="Stop at this many samples per variant (the spot checks' 2 x --spot-checks timed calls come on top)."),
    min_time: float = typer.Option(0.05, "--min-time", help="Measure at least this long per case (s)."),
    max_time: float = typer.Option(2.0, "--max-time", help="Measurement budget per case (s); warm-up (--warmup-max-time) and the correctness checks come on top."),
    noise_target: float = typer.Option(0.005, "--noise-target", help="Stop when the median's relative standard error is below this for every variant."),
    min_warmup_calls: int = typer.Option(3, "--min-warmup-calls", help="Warm-up calls per variant at least."),
    warmup_min_time: float = typer.Option(0.025, "--warmup-min-time", help="Warm up at least this long (s)."),
    warmup_max_time: float = typer.Option(1.0, "--warmup-max-time", help="Warm up at most this long (s), steady or not (recorded)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the input streams."),
    interleave: bool = typer.Option(True, "--interleave/--no-interleave", help="Alternate variants call by call (ABBA); --no-interleave runs them in blocks."),
    input_sets: Optional[int] = typer.Option(None, "--input-sets", help="Input sets to cycle through (default: 1; rotate mode: enough to cover twice the cache)."),
    device: str = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:1 ..."),
    backend_option: Optional[List[str]] = typer.Option(None, "--backend-option", help="Backend option KEY=VALUE (fake backend: noise, hot_factor, ...)."),
    telemetry: bool = typer.Option(True, "--telemetry/--no-telemetry", help="Sample GPU clocks, temperature, power and throttle reasons through NVML."),
    processes: str = typer.Option("auto", "--processes", help="Repeat the run in this many fresh processes (process-level repetitions); auto: one run, and --auto-processes runs in all when any variant misses the noise target."),
    auto_processes: int = typer.Option(3, "--auto-processes", help="With --processes auto: runs in all when the first run misses the noise target."),
    spot_checks: int = typer.Option(8, "--spot-checks", help="Timed rounds, at seeded random places, whose calls get new input values and poisoned outputs and are verified."),
    batch_below: float = typer.Option(20.0, "--batch-below-us", help="Variants under this many microseconds per call are timed in batches of back-to-back calls (hot or rotating caches on a device timer; 0: never); the batch size is recorded as calls_per_sample."),
    cool_down: Optional[float] = typer.Option(None, "--cool-down-below", help="Before each measured block, wait (sleeping, at most --cool-down-max-time s) until the GPU reads under this temperature in degrees C (recorded)."),
    cool_down_max: float = typer.Option(30.0, "--cool-down-max-time", help="Longest thermal cool-down wait before one block (s)."),
    hard_time_limit: float = typer.Option(120.0, "--hard-time-limit", help="Minimums (--min-samples, --min-warmup-calls) win over the time budgets up to this many seconds per phase; past it the run records that it stopped short."),
    fmt: str = typer.Option("table", "--format", "-f", help="Summary format: table or json."),
) -> int:
    """Run a benchmark file: correctness, warm-up, interleaved timing; write timing logs + manifest."""
    from profaudit.bench import RunOptions, run_file
    from profaudit.cli.common import emit_json, key_values, progress_bar, stderr_console
    from profaudit.errors import UsageError
    from profaudit.samples import parse_scalar

    if cache is not None and cache not in _CACHE_CHOICES:
        raise UsageError(f"--cache {cache!r}: choose {', '.join(_CACHE_CHOICES)}")
    if fmt not in ("table", "json"):
        raise UsageError(f"--format {fmt!r}: choose table or json")
    if processes != "auto":
        try:
            processes = int(processes)
        except ValueError:
            raise UsageError(f"--processes {processes!r}: a number of processes or auto") from None
        if processes < 1:
            raise UsageError("--processes must be at least 1")
    if auto_processes < 1:
        raise UsageError("--auto-processes must be at least 1")
    opts = RunOptions(
        cache=cache,
        min_samples=min_samples,
        max_samples=max_samples,
        min_time_s=min_time,
        max_time_s=max_time,
        noise_target=noise_target,
        min_warmup_calls=min_warmup_calls,
        min_warmup_s=warmup_min_time,
        max_warmup_s=warmup_max_time,
        seed=seed,
        interleave=interleave,
        input_sets=input_sets,
        device=device,
        backend_options=key_values(backend_option, "--backend-option", parse_scalar),
        telemetry=telemetry,
        spot_checks=spot_checks,
        hard_time_s=hard_time_limit,
        cooldown_c=cool_down,
        cooldown_max_s=cool_down_max,
        batch_below_ns=batch_below * 1e3,
    )
    with progress_bar("benchmarking", None) as advance:
        manifest = run_file(file, output_dir, pattern=pattern, variants=variant, options=opts, progress=advance, processes=processes, auto_processes=auto_processes)
    rows = []
    bad = 0
    for c in manifest["cases"]:
        for v, ve in c["variants"].items():
            ok = ve.get("status") == "ok"
            bad += not ok
            rows.append(
                {
                    "case": c["id"],
                    "variant": v,
                    "status": ve.get("status"),
                    "median": _fmt_ns(ve.get("median_ns")),
                    "samples/min": _cell_samples(ve),
                    "noise (rel SE)": _cell_noise(ve) if ve.get("samples") is not None else "—",
                    "warm-up": _cell_warmup(ve),
                    "stop": ve.get("stop_reason") if not isinstance(ve.get("stop_reason"), list) else ",".join(map(str, ve["stop_reason"])),
                    "checked": ve.get("correctness") if not isinstance(ve.get("correctness"), list) else ",".join(map(str, ve["correctness"])),
                    "error": ve.get("error"),
                }
            )
    if fmt == "json":
        emit_json(manifest)
    else:
        import polars as pl

        from profaudit.cli.common import emit_frame

        # emit_frame escapes cells itself: case ids hold brackets (matmul[n=256])
        df = pl.DataFrame(rows, strict=False)
        if df.height and df["error"].null_count() == df.height:
            df = df.drop("error")
        emit_frame(df, "table", None, title=f"{file} -> {output_dir}", limit=0)
    con = stderr_console()
    auto = manifest.get("auto_processes") or {}
    if auto.get("extra_processes"):
        con.print(f"ran {manifest['processes']} processes: {auto['reason']}", markup=False, highlight=False)
    elif auto.get("reason"):
        con.print(auto["reason"], markup=False, highlight=False)
    for line in _order_notes(manifest):
        con.print(line, markup=False, highlight=False)
    short = [(c["id"], v) for c in manifest["cases"] for v, ve in c["variants"].items() if any(_each(ve.get("stopped_short")))]
    if short:
        con.print(f"{plural(len(short), 'variant')} stopped short of --min-samples / --min-warmup-calls (hard time limit): {', '.join(f'{c} {v}' for c, v in short)}", markup=False, highlight=False)
    logs = sum(len(ve.get("logs") or ([ve["log"]] if ve.get("log") else [])) for c in manifest["cases"] for ve in c["variants"].values())
    con.print(f"wrote {output_dir / 'manifest.json'} and {plural(logs, 'timing log')} under {output_dir}", markup=False, highlight=False)
    if bad:
        con.print(f"[red]{plural(bad, 'variant')} failed {'its' if bad == 1 else 'their'} correctness check or did not run[/red]")
        for c in manifest["cases"]:
            for v, ve in c["variants"].items():
                if ve.get("status") != "ok":
                    con.print(f"  {c['id']} {v}: {ve.get('error')}", markup=False, highlight=False)
    return 1 if bad else 0


@bench_app.command("compare")
def compare_cmd(
    source: Path = typer.Argument(..., help="A bench output folder (with manifest.json), a folder of timing logs, or one timing log."),
    baseline: str = typer.Option(..., "--baseline", help="Variant that is the baseline."),
    candidate: str = typer.Option(..., "--candidate", help="Variant claimed to be faster."),
    pattern: Optional[str] = typer.Option(None, "-k", "--pattern", help="Only cases whose id matches."),
    claimed: Optional[float] = typer.Option(None, "--claimed", help="The speedup to claim (default: the measured ratio of medians)."),
    statistic: str = typer.Option("median", "--statistic", help="Statistic of the claim: median, mean, trimmed_mean, pNN ..."),
    intended: Optional[List[str]] = typer.Option(None, "--intended", help="A meta key the claim is about (dtype, compile_mode, ...): reported, not failed."),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", "-o", help="Where to write the claim files and audits (default: SOURCE/claims)."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
    fail_on: Optional[str] = typer.Option(None, "--fail-on", help="Gate CI on the measured speedups instead of the audit verdicts: regression, any-significant or none (see profaudit compare --help)."),
    max_slowdown: str = MAX_SLOWDOWN_OPTION,
    junit: Optional[Path] = JUNIT_OPTION,
    summary: Optional[Path] = SUMMARY_OPTION,
    sarif: Optional[Path] = typer.Option(None, "--sarif", help="Write every case's audit findings as SARIF 2.1.0 (located at its claim file)."),
) -> int:
    """Write a claim file per case (baseline vs candidate) and audit it with the fairness rules.

    With --fail-on the exit code is the gate's (as profaudit compare): 0 no gated difference, 1 a
    significant difference beyond --max-slowdown or a failed variant, 2 unusable input, 4 not comparable.
    """
    from profaudit.bench import compare_run
    from profaudit.cli.common import emit_json, stdout_console
    from profaudit.errors import UsageError

    if fmt not in ("text", "json"):
        raise UsageError(f"--format {fmt!r}: choose text or json")
    from profaudit.audit import parse_statistic

    try:
        parse_statistic(statistic)
    except ValueError as exc:
        raise UsageError(f"--statistic {statistic!r}: {exc}") from None
    if fail_on is not None:
        from profaudit.compare.gate import check_fail_on, parse_slowdown

        check_fail_on(fail_on)
        parse_slowdown(max_slowdown)
    outs = compare_run(source, baseline, candidate, pattern=pattern, claimed=claimed, statistic=statistic, out_dir=output_dir, intended=tuple(intended or ()))
    from profaudit.bench import dropped_cases
    from profaudit.cli.common import stderr_console as _err

    # every case of the source is accounted for: those without a claim say why (on stderr, so
    # the JSON on stdout stays the list of outcomes)
    dropped = dropped_cases(source, baseline, candidate, pattern)
    if dropped:
        _err().print(f"{plural(len(dropped), 'case')} dropped, no claim written:", markup=False, highlight=False)
        for cid, why in dropped:
            _err().print(f"  {cid}: {why}", markup=False, highlight=False)
    if fmt == "json":
        emit_json([o.as_dict() for o in outs])
    else:
        con = stdout_console()
        style = {"PASS": "green", "WARN": "yellow", "INCONCLUSIVE": "magenta", "FAIL": "red"}
        for o in outs:
            sup = o.supported
            iv = fmt_speedup(sup.get("estimate"), sup.get("low"), sup.get("high")) if sup.get("estimate") is not None else ""
            from rich.markup import escape

            if o.claim_path is None:
                con.print(f"[bold {style.get(o.verdict, 'white')}]{o.verdict}[/] {escape(o.case_id)}: no claim written")
                for r in o.reasons:
                    con.print(f"    {r}", markup=False, highlight=False)
                continue
            con.print(f"[bold {style.get(o.verdict, 'white')}]{o.verdict}[/] {escape(o.case_id)}: claimed {o.claimed:g}x ({statistic}), supported {iv or MISSING}")
            for r in o.reasons[:5]:
                con.print(f"    {r}", markup=False, highlight=False)
            con.print(f"    claim {o.claim_path}; audit {o.audit_md}", markup=False, highlight=False)
    if fail_on is not None or junit is not None or summary is not None or sarif is not None:
        from profaudit.compare.gate import gate_bench_outcomes

        gate = gate_bench_outcomes(outs, fail_on=fail_on or "none", max_slowdown=max_slowdown, title=f"profaudit bench compare {candidate} vs {baseline}")
        from profaudit.compare.ci_report import write_reports

        located = [(f, [str(o.claim_path)]) for o in outs if o.report is not None for f in o.report.findings]
        write_reports(gate, junit=junit, summary=summary, sarif_path=sarif, located=located)
        if fail_on is not None:
            from profaudit.cli.common import stderr_console

            stderr_console().print(f"profaudit bench compare: {gate.summary_line()}", markup=False, highlight=False)
            return gate.exit_code
    return 0 if all(o.verdict in ("PASS", "WARN") for o in outs) else 1


def _ncu_template(
    file: Path = typer.Argument(..., help="Benchmark file (.py)."),
    output_dir: Path = typer.Option(Path("."), "--output-dir", "-o", help="Bench output folder: reports go to OUTDIR/ncu/, beside manifest.json."),
    pattern: Optional[str] = typer.Option(None, "-k", "--pattern", help="Only cases whose id matches."),
    variant: Optional[List[str]] = typer.Option(None, "--variant", help="Only these variants (repeatable)."),
    calls: int = typer.Option(1, "--calls", help="Profiled calls (inside the NVTX range)."),
    warmup: int = typer.Option(5, "--warmup", help="Untimed calls before the profiled ones."),
    cache_control: Optional[str] = typer.Option(None, "--cache-control", help="all or none (default: follow the case's timing cache mode)."),
    clock_control: str = typer.Option("none", "--clock-control", help="none (default: never change GPU clocks) or base."),
    filter_: str = typer.Option("nvtx", "--filter", help="nvtx (NVTX range around the profiled calls) or kernel (kernel-name regex + launch skip/count)."),
    kernel_name: Optional[str] = typer.Option(None, "--kernel-name", help="Kernel-name regex for --filter kernel."),
    launch_skip: Optional[int] = typer.Option(None, "--launch-skip", help="Override ncu --launch-skip."),
    launch_count: Optional[int] = typer.Option(None, "--launch-count", help="Override ncu --launch-count."),
    launches_per_call: int = typer.Option(1, "--launches-per-call", help="For --filter kernel: launches matching --kernel-name that one call of the variant makes (the launch skip and count scale with it)."),
    section: Optional[List[str]] = typer.Option(None, "--section", help="ncu section (repeatable; replaces the roofline defaults)."),
    metrics: Optional[str] = typer.Option(None, "--metrics", help="Comma-separated metrics (replaces the defaults; '' for none)."),
    section_set: Optional[str] = typer.Option(None, "--set", help="ncu --set NAME instead of sections."),
    replay_mode: str = typer.Option("kernel", "--replay-mode", help="ncu --replay-mode."),
    check: bool = typer.Option(True, "--check/--no-check", help="Check the variant against the reference before profiling."),
    seed: int = typer.Option(0, "--seed", help="Seed of the inputs (the timing run's default is 0)."),
    device: str = typer.Option("auto", "--device", help="Device for the profiled process."),
    ncu: Optional[str] = typer.Option(None, "--ncu", help="Path to ncu (default: $NCU or ncu on PATH)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Kill ncu after this many seconds."),
):
    """(template)"""


def _ncu_options(kw: dict):
    from profaudit.bench import NcuOptions
    from profaudit.bench.ncu import DEFAULT_METRICS, DEFAULT_SECTIONS

    metrics = kw["metrics"]
    return NcuOptions(
        calls=kw["calls"],
        warmup=kw["warmup"],
        cache_control=kw["cache_control"],
        clock_control=kw["clock_control"],
        filter=kw["filter_"],
        kernel_name=kw["kernel_name"],
        launch_skip=kw["launch_skip"],
        launch_count=kw["launch_count"],
        launches_per_call=kw["launches_per_call"],
        sections=tuple(kw["section"]) if kw["section"] else DEFAULT_SECTIONS,
        metrics=tuple(m.strip() for m in metrics.split(",") if m.strip()) if metrics is not None else DEFAULT_METRICS,
        section_set=kw["section_set"],
        replay_mode=kw["replay_mode"],
        check=kw["check"],
        seed=kw["seed"],
        device=kw["device"],
        ncu=kw["ncu"],
    )


def _ncu_run(run: bool, **kw) -> int:
    from profaudit.bench import ncu_plan, run_ncu
    from profaudit.bench.ncu import require_ncu
    from profaudit.cli.common import stderr_console

    opts = _ncu_options(kw)
    if run:
        require_ncu(opts.ncu)  # before importing the benchmark file: fail fast, one line
    plans = ncu_plan(kw["file"], kw["output_dir"], pattern=kw["pattern"], variants=kw["variant"], options=opts)
    if not run:
        for p in plans:
            typer.echo(p.command)
        return 0
    con = stderr_console()
    records = run_ncu(plans, kw["output_dir"], ncu=opts.ncu, echo=lambda c: typer.echo(c), timeout_s=kw["timeout"])
    rc = 0
    for r in records:
        state = "ok" if r["returncode"] == 0 and r["report_exists"] else f"failed (exit {r['returncode']})"
        con.print(f"{r['case']} {r['variant']}: {state}; report {r['report']}" + (f"; {plural(r['kernels_profiled'], 'kernel')}" if r.get("kernels_profiled") is not None else ""), markup=False, highlight=False)
        for e in r.get("ncu_errors") or []:
            con.print(f"    {e}", markup=False, highlight=False)
        if r.get("cache_note"):
            con.print(f"    note: {r['cache_note']}", markup=False, highlight=False)
        if rc == 0 and r["returncode"] != 0:
            rc = r["returncode"] if 0 < r["returncode"] < 256 else 1
        elif rc == 0 and not r["report_exists"]:
            rc = 1
    return rc


def _make(run: bool, doc: str):
    @functools.wraps(_ncu_template)
    def cmd(**kw):
        return _ncu_run(run, **kw)

    cmd.__doc__ = doc
    return cmd


bench_app.command("ncu")(_make(True, "Re-run benchmark cases under Nsight Compute (ncu) and write .ncu-rep reports beside the manifest; prints each exact command."))


def _ceilings_hook() -> None:
    from profaudit.cli.bench_ceilings_cmd import ceilings_cmd

    bench_app.command("ceilings")(ceilings_cmd)


_ceilings_hook()


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
    app.command("ncu-command")(_make(False, "Print the exact ncu command(s) `profaudit bench ncu` would run, without running them."))
