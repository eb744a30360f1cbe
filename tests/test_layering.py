"""The packages' dependency direction (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BATON = Path(__file__).resolve().parent.parent / "baton"
PACKAGES = (
    "storage",
    "mailboxes",
    "runtime",
    "context",
    "memory",
    "models",
    "agents",
    "pipeline",
    "server",
    "testing",
)


def _all_but(*allowed: str) -> tuple[str, ...]:
    return tuple(f"baton.{p}" for p in PACKAGES if p not in allowed)


# The arrows point one way (docs/architecture.md, "Dependency direction"):
# server → pipeline → agents → models → {context, runtime}; runtime → mailboxes; storage at
# the bottom, for runtime, agents and above; memory and context stand alone; testing sits on
# top of everything it fakes.
FORBIDDEN = {
    "storage": _all_but("storage"),
    "mailboxes": _all_but("mailboxes"),
    "runtime": _all_but("runtime", "mailboxes", "storage"),
    "context": _all_but("context"),
    "memory": _all_but("memory", "context"),
    "models": _all_but("models", "context", "runtime"),
    "agents": _all_but("agents", "models", "context", "runtime", "memory", "mailboxes", "storage"),
    "pipeline": ("baton.server", "baton.testing"),
    "server": ("baton.testing",),
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


ROLES = {"init", "execute", "scheduler"}


@pytest.mark.parametrize("package", ["mailboxes", "runtime", "context", "memory", "storage"])
def test_the_lower_floors_name_no_role(package: str) -> None:
    """No string in the kernel, the mailboxes, the context engine, memory or storage is one
    of the pipeline's roles: budgets, summary schemas and statuses by role live with the
    pipeline."""
    named = sorted(
        f"{path.relative_to(BATON.parent)}:{node.lineno} names {node.value!r}"
        for path in (BATON / package).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in ROLES
    )
    assert [] == named


def test_the_context_engine_exports_what_a_strategy_author_needs() -> None:
    """`baton.context` exports at most 30 names; the rest is importable from its modules."""
    import baton.context  # noqa: PLC0415

    assert len(baton.context.__all__) <= 30
