"""The CLI's light commands, run to the end against a runtime in a fresh interpreter, import
only what they use: no FastAPI, uvicorn, rich, structlog, SDK, kernel, agent loop, model
client or Scheduler; `tell` and `ask` not even the async client, anyio or pydantic
(docs/architecture.md, "What a command imports")."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from control_actors import FakeScheduler, Greeter

from baton.pipeline.scenario_state import ScenarioState
from baton.runtime import Runtime
from baton.server import ControlServer

# What no light command may load: the server, the runtime it talks to, the agents' loop and
# tools, the model clients and the Scheduler, and the libraries behind them.
NEVER = (
    "anthropic",
    "fastapi",
    "redis",
    "rich",
    "starlette",
    "structlog",
    "uvicorn",
    "baton.agents.agent",
    "baton.agents.agent_loop",
    "baton.agents.tools",
    "baton.mailboxes",
    "baton.memory.store",
    "baton.models",
    "baton.pipeline.config",
    "baton.pipeline.scheduler",
    "baton.runtime.actor",
    "baton.runtime.runtime",
    "baton.server.control_api",
)
# What the commands that neither show nor decide scenarios nor read the token log may not
# load either: no agent, pipeline or context code at all.
PIPELINE = ("baton.agents", "baton.context", "baton.pipeline")
# What `baton tell` and `baton ask`, on the command line's own wire, do not load either: the
# async client, the event loop, pydantic and the error tree that needs it.
WIRE = ("anyio", "asyncio", "httpx2", "pydantic", "baton.errors")
# What the scenario commands and `status` do not load either: the context engine, and the
# pipeline's messages (the scenario's shape is `baton.pipeline.scenario_state`).
SCENARIO = ("baton.context", "baton.pipeline.messages")

RUN = """
import json, sys
from baton.server.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": sorted(sys.modules)}, out)
"""


def pending(name: str) -> ScenarioState:
    return ScenarioState(
        scenario=name, phase="awaiting_approval", pending_approval={"handoff_type": "x"}
    )


@asynccontextmanager
async def served(workspace: Path) -> AsyncIterator[None]:
    """A greeter and a scheduler with scenarios awaiting approval, behind the control API."""
    scenarios = {name: pending(name) for name in ("leave", "trip")}
    async with Runtime.open(workspace) as runtime, ControlServer.open(runtime):
        await runtime.spawn("greeter", Greeter)
        await runtime.spawn("scheduler", FakeScheduler, scenarios)
        yield


async def run_cli(workspace: Path, *argv: str) -> tuple[int, list[str]]:
    """Exit code and `sys.modules` of a fresh interpreter that ran `baton ARGV` to its end."""
    out = workspace / "modules.json"
    flags = [] if argv == ("--help",) else ["--workspace", str(workspace)]
    with anyio.fail_after(60):
        await anyio.run_process([sys.executable, "-c", RUN, str(out), *argv, *flags], check=True)
    found = json.loads(out.read_text())
    return found["code"], found["modules"]


# A package's `__init__` (its names are imported on first use) and its `errors` module (the
# client rebuilds any error the runtime answers with) cost next to nothing: never heavy.
LIGHT_PARTS = re.compile(r"^baton\.(?!errors$)\w+(\.errors)?$")


def heavy(modules: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(
        m
        for m in modules
        if any(m == p or m.startswith(f"{p}.") for p in prefixes) and not LIGHT_PARTS.match(m)
    )


LIGHT = [
    (("--help",), NEVER + PIPELINE),
    (("tell", "greeter", "Hello", '{"name": "a"}'), NEVER + PIPELINE + WIRE),
    (("ask", "greeter", "Hello", '{"name": "a"}'), NEVER + PIPELINE + WIRE),
    (("dead-letters",), NEVER + PIPELINE),
    (("status",), NEVER + SCENARIO),
    (("show", "leave"), NEVER + SCENARIO),
    (("approve", "leave"), NEVER + SCENARIO),
    (("reject", "trip", "--reason", "no"), NEVER + SCENARIO),
    (("submit", "other"), NEVER + SCENARIO),
]


@pytest.mark.parametrize(("argv", "prefixes"), LIGHT, ids=[argv[0] for argv, _ in LIGHT])
async def test_a_light_command_imports_only_what_it_uses(
    tmp_path: Path, argv: tuple[str, ...], prefixes: tuple[str, ...]
) -> None:
    """The command succeeds against a running runtime without loading the heavy modules."""
    async with served(tmp_path):
        code, modules = await run_cli(tmp_path, *argv)
    assert (0, []) == (code, heavy(modules, prefixes))


async def test_stop_and_tail_import_only_what_they_use(tmp_path: Path) -> None:
    """`baton stop` (no runtime: it fails after connecting is tried) and `baton tail -n 5`
    (an empty log) load no heavy module; `stop` nothing of the pipeline either, `tail` only
    its token-log records."""
    (tmp_path / ".baton" / "logs").mkdir(parents=True)
    (tmp_path / ".baton" / "logs" / "tokens.jsonl").write_text("")
    stop_code, stop = await run_cli(tmp_path, "stop")
    tail_code, tail = await run_cli(tmp_path, "tail", "-n", "5")
    assert (1, []) == (stop_code, heavy(stop, NEVER + PIPELINE))
    # The pipeline's token-log records (a few pydantic models) are what `--event` names.
    records = {"baton.pipeline", "baton.pipeline.records"}
    pipeline = [name for name in heavy(tail, (*NEVER, "baton.pipeline")) if name not in records]
    assert (0, []) == (tail_code, pipeline)
