"""Names a package exports without importing their modules until first used.

Loading the SDK (about half a second), FastAPI and uvicorn (a third) or redis-py (a tenth)
is a cost `import baton` should not pay when the offline model, local journals and the client
are all a program needs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports `name` from `modules[name]`."""

    def lookup(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return lookup
