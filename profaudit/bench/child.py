"""Child-process entry points: `python -m profaudit.bench.child run|target ...`.

`run`: one process-level repetition of `profaudit bench run --processes N` (arguments: file,
output folder, RunOptions as JSON, run index). `target`: the process `ncu` profiles
(`profaudit bench ncu`). Errors print one line on stderr and exit 2, like the CLI.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from profaudit.errors import ProfauditError

    ap = argparse.ArgumentParser(prog="python -m profaudit.bench.child")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("file")
    r.add_argument("outdir")
    r.add_argument("options_json")
    r.add_argument("run_index", type=int)
    r.add_argument("--pattern")
    r.add_argument("--variant", action="append", default=[])
    t = sub.add_parser("target")
    t.add_argument("file")
    t.add_argument("--case", required=True)
    t.add_argument("--variant", required=True)
    t.add_argument("--warmup", type=int, default=5)
    t.add_argument("--calls", type=int, default=1)
    t.add_argument("--range", required=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", default="auto")
    t.add_argument("--sidecar")
    t.add_argument("--no-check", action="store_true")
    t.add_argument("--require-nvtx", action="store_true")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "run":
            from profaudit.bench.session import run_child

            return run_child(a.file, a.outdir, a.options_json, a.run_index, a.pattern, a.variant)
        from profaudit.bench.ncu import run_target

        run_target(a.file, a.case, a.variant, warmup=a.warmup, calls=a.calls, range_name=a.range, check=not a.no_check, seed=a.seed, device=a.device, sidecar=a.sidecar, require_nvtx=a.require_nvtx)
        return 0
    except ProfauditError as exc:
        print(f"profaudit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
