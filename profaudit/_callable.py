"""Callable modules: `profaudit.roofline(ps)`, `profaudit.audit(claim)`, `profaudit.compare(a, b)`.

Each of these names is both a module (or package) with helpers and the one function users call.
Re-exporting the function under the module's name would hide the module (`import a.b as m`
resolves the attribute), so instead the module object itself becomes callable by giving it a
ModuleType subclass (assigning a module's __class__ is supported since Python 3.5).
"""

from __future__ import annotations

import sys
import types
from typing import Any, Callable


def make_module_callable(module_name: str, func: Callable[..., Any]) -> None:
    module = sys.modules[module_name]

    class CallableModule(types.ModuleType):
        __doc__ = module.__doc__

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)

    module.__class__ = CallableModule
    # inspect.signature (IPython's `?`, IDE call tips at run time) follows __wrapped__ to the function
    module.__wrapped__ = func
