"""Importing baton, or its actor kernel, loads none of the heavy packages behind the names it
exports (docs/architecture.md, "What a command imports")."""

from __future__ import annotations

import json
import subprocess
import sys

# What `baton run`, the agents and the pipeline need, and `import baton` must not load.
HEAVY = (
    "anthropic",
    "fastapi",
    "httpx2",
    "redis",
    "rich",
    "starlette",
    "structlog",
    "uvicorn",
    "baton.agents",
    "baton.context",
    "baton.mailboxes",
    "baton.memory",
    "baton.models",
    "baton.pipeline",
    "baton.server",
)


def loaded_after(code: str) -> list[str]:
    """The heavy modules in `sys.modules` of a fresh interpreter after it runs `code`."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    modules = json.loads(done.stdout.splitlines()[-1])
    return sorted(
        name for name in modules if any(name == h or name.startswith(f"{h}.") for h in HEAVY)
    )


def test_import_baton_and_the_runtime_load_nothing_heavy() -> None:
    """`import baton; import baton.runtime` loads no FastAPI, uvicorn, rich, SDK, redis-py,
    structlog, HTTP client, nor any module of the agents, pipeline, models or server."""
    assert [] == loaded_after("import baton\nimport baton.runtime")


def test_the_kernels_names_load_no_server_agent_or_model() -> None:
    """`from baton import Actor, Runtime, ...` loads the actor kernel (structlog, the
    mailboxes), but no FastAPI, uvicorn, SDK, HTTP client, agent, pipeline or server code."""
    loaded = loaded_after(
        "from baton import Actor, ActorRef, Runtime, SupervisorPolicy, UsageError, handler"
    )
    kernel = ("structlog", "rich", "baton.mailboxes")
    assert [] == [name for name in loaded if not name.startswith(kernel)]
