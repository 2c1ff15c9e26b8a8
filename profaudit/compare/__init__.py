"""Compare two profiles or timing logs: what changed between A and B, and is the change real.

    from profaudit.compare import compare
    cmp = compare("before.nsys-rep", "after.nsys-rep")
    cmp.verdict, cmp.findings            # fairness of the pair first, then who is faster
    cmp.matched, cmp.added, cmp.removed  # polars frames
    cmp.contributions                    # where the time went, shares summing to 100 %
    print(cmp.render("markdown"))        # table, markdown, html, json

The package itself is callable: `profaudit.compare(a, b)` is `compare(a, b)`, and its submodules
stay reachable (`profaudit.compare.match`, `from profaudit.compare import render`).
"""

from profaudit.compare.core import Comparison, Side, compare, resolve_side
from profaudit.compare.match import MATCH_MODES, library_class, match_entities, similarity

__all__ = ["compare", "Comparison", "Side", "resolve_side", "MATCH_MODES", "match_entities", "library_class", "similarity"]

from profaudit._callable import make_module_callable  # noqa: E402

make_module_callable(__name__, compare)
