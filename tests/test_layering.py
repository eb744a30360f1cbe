"""The packages' dependency direction (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BATON = Path(__file__).resolve().parent.parent / "baton"
# The arrows point one way: server → actors → {runtime, context}; runtime → mailboxes;
# testing sits on top of everything it fakes.
FORBIDDEN = {
    "runtime": ("baton.agents", "baton.context", "baton.server", "baton.testing"),
    "mailboxes": (
        "baton.agents",
        "baton.runtime",
        "baton.context",
        "baton.server",
        "baton.testing",
    ),
    "context": (
        "baton.agents",
        "baton.runtime",
        "baton.mailboxes",
        "baton.server",
        "baton.testing",
    ),
    "actors": ("baton.server", "baton.testing"),
    "server": ("baton.testing",),
    # Long-term memory stands beside context: agents use it, it uses no runtime piece.
    "memory": (
        "baton.agents",
        "baton.runtime",
        "baton.mailboxes",
        "baton.server",
        "baton.testing",
    ),
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(str(node.args[0].value))
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_package_imports_against_the_dependency_direction(package: str) -> None:
    """No module of the package imports a package it must not know about."""
    offending = sorted(
        f"{path.relative_to(BATON.parent)} imports {module}"
        for path in (BATON / package).rglob("*.py")
        for module in imported_modules(path)
        if module.startswith(FORBIDDEN[package])
    )
    assert [] == offending
