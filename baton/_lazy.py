"""Names a package exports without importing their modules until first used.

Loading the SDK (about half a second), FastAPI and uvicorn (a third), rich, structlog or
redis-py is a cost `import baton` — and every `import baton.<package>.<module>`, which runs
the packages' `__init__` first — should not pay when the offline model, local journals or
the client are all a program needs; the command line's light commands start in a tenth of a
second only so (docs/architecture.md, "server/").
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports `name` from `modules[name]`."""

    def lookup(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        # Kept on the package: later look-ups find it without coming here again.
        setattr(sys.modules[package], name, value)
        return value

    return lookup
