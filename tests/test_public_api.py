"""Every package states its public names, and every stated name exists."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

PACKAGES = [
    "baton",
    "baton.runtime",
    "baton.agents",
    "baton.mailboxes",
    "baton.context",
    "baton.agents.tools",
    "baton.memory",
    "baton.storage",
]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_in_all_exists(package: str) -> None:
    """Each name a package lists in `__all__` can be imported from it."""
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert [] == missing


LAYER_ERRORS = sorted(
    f"baton.{path.parent.name}.errors"
    for path in (Path(__file__).resolve().parent.parent / "baton").glob("*/errors.py")
)


def _error_classes(module: object) -> set[type]:
    return {
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, Exception)
        and value.__module__ == getattr(module, "__name__", None)
    }


def test_baton_errors_re_exports_every_layers_errors() -> None:
    """Each layer's own errors (its `errors` module) are names of `baton.errors`, the one place
    users import them from, and `baton.errors` names nothing that is not one of them."""
    errors = importlib.import_module("baton.errors")
    defined = set().union(*(_error_classes(importlib.import_module(m)) for m in LAYER_ERRORS))
    exported = {getattr(errors, name) for name in errors.__all__}
    exported_errors = {v for v in exported if isinstance(v, type) and issubclass(v, Exception)}
    assert (set(), True) == (defined - exported, len(LAYER_ERRORS) >= 8)
    assert _error_classes(errors) | defined == exported_errors


def test_errors_derive_from_one_root() -> None:
    """Every exception class in baton.errors derives from BatonError and is named for it."""
    errors = importlib.import_module("baton.errors")
    names = [getattr(errors, name) for name in errors.__all__]
    classes = [v for v in names if isinstance(v, type) and issubclass(v, Exception)]
    assert all(issubclass(c, errors.BatonError) for c in classes)
    assert all(c.__name__.endswith(("Error", "Failure")) for c in classes)
    undocumented = [
        c.__name__
        for c in classes
        if not (c.__doc__ or "").startswith(("Raised when", "Raised by"))
    ]
    assert [] == undocumented
