"""Names a package loads on first use (PEP 562): :mod:`judgelab` and :mod:`judgelab.admin`.

A rater's page imports both packages; their public names (the analyst's library, the admin's
functions) pull in pandas, SciPy and the calibration code, which a rater never needs. Each package
keeps a table ``name -> module`` and gets its module ``__getattr__`` from :func:`lazy_getattr`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, table: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``table[name]``'s module on first use.

    Args:
        package: The package's name (for the error of an unknown name).
        table: Each public name and the module that defines it.
        namespace: The package's ``globals()``: a name loaded once is kept there, so later
            lookups skip ``__getattr__``.

    Returns:
        The function to bind as the package's ``__getattr__``.

    Example:
        >>> getattr_ = lazy_getattr("pkg", {"sqrt": "math"}, space := {})
        >>> getattr_("sqrt")(9.0), "sqrt" in space
        (3.0, True)
    """

    def module_getattr(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return module_getattr
