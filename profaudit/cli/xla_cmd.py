"""`profaudit xla-cost`: attach XLA cost analysis (FLOPs, bytes) to XLA ops and write a dataset."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from profaudit.cli.common import load_with_progress, stderr_console


def register(app: typer.Typer) -> None:
    @app.command("xla-cost")
    def xla_cost(
        paths: List[str] = typer.Argument(..., help="XLA profiles (xplane.pb, JAX log dirs) or a dataset."),
        cost: Path = typer.Option(..., "--cost", help="Cost JSON: profaudit.xla.save_cost_analysis output, or json.dump of Compiled.cost_analysis()."),
        output: Path = typer.Option(..., "--output", "-o", help="Dataset folder to write (merged into when it exists)."),
        module: Optional[str] = typer.Option(None, "--module", help="HLO module the cost belongs to (e.g. jit_f) where the file does not say; NAME(ID) for one compiled program (jit_f(19)) when jax compiled the module several times."),
        op: Optional[str] = typer.Option(None, "--op", help="Give the cost to this HLO op's rows instead of spreading it over the module."),
        overwrite: bool = typer.Option(False, "--overwrite", help="Replace FLOPs/bytes the trace already recorded."),
    ) -> None:
        """Give XLA ops FLOPs and bytes from jax's cost_analysis() so they get roofline positions."""
        from profaudit.dataset import write_dataset
        from profaudit.xla import attach_cost_file

        ps = load_with_progress(paths)
        ps = attach_cost_file(ps, cost, module=module, op=op, overwrite=overwrite)
        write_dataset(ps, output)
        k = ps.kernels
        n = k.filter(k["flops_method"].str.starts_with("cost-analysis:")).height if k.height else 0
        from profaudit.fmt import plural

        stderr_console().print(f"attached cost analysis to {plural(n, 'op row')} in {plural(len(ps), 'profile')}; wrote {output}")
