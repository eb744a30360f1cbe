"""Every package states its public names, and every stated name exists."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = [
    "baton",
    "baton.runtime",
    "baton.agents",
    "baton.mailboxes",
    "baton.context",
    "baton.agents.tools",
    "baton.memory",
]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_in_all_exists(package: str) -> None:
    """Each name a package lists in `__all__` can be imported from it."""
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert [] == missing


def test_errors_derive_from_one_root() -> None:
    """Every exception class in baton.errors derives from BatonError and is named for it."""
    errors = importlib.import_module("baton.errors")
    classes = [v for v in vars(errors).values() if isinstance(v, type) and issubclass(v, Exception)]
    assert all(issubclass(c, errors.BatonError) for c in classes)
    assert all(c.__name__.endswith(("Error", "Failure")) for c in classes)
    undocumented = [
        c.__name__
        for c in classes
        if not (c.__doc__ or "").startswith(("Raised when", "Raised by"))
    ]
    assert [] == undocumented
