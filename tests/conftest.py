"""Shared fixtures: every test runs on asyncio (the supported backend)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
