"""Where baton's log lines go: nowhere until the program configures logging; through the
standard library's `logging` when it sets that up; through its own structlog configuration,
left as it is, when it has one (docs/architecture.md, "Where the log lines go")."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from pydantic import BaseModel

from baton import Actor, Runtime, SupervisorPolicy, handler
from baton.runtime.errors import HandlerFailedError

SECRET = "sk-ant-api03-SECRETSECRETSECRET"

# README's "Actors in your own code", with a handler that fails once (naming the API key),
# so that the runtime logs an actor start, a handler failure and a dead letter.
EMBEDDED = f"""
import sys

import anyio
from pydantic import BaseModel

from baton import Actor, Runtime, SupervisorPolicy, handler

if sys.argv[1:] == ["--logging"]:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")


class Order(BaseModel):
    item: str


class Orders(Actor):
    @handler
    async def place(self, msg: Order) -> str:
        if msg.item == "boom":
            raise ValueError("no key {SECRET} here")
        return msg.item


async def main() -> None:
    async with Runtime.open(policy=SupervisorPolicy(max_attempts=1)) as rt:
        ref = await rt.spawn("orders", Orders)
        await ref.tell(Order(item="boom"))
        assert "tea" == await ref.ask(Order(item="tea"), timeout=5)


anyio.run(main)
"""


def run_embedded(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run EMBEDDED in a fresh interpreter, with an API key in its environment."""
    return subprocess.run(
        [sys.executable, "-c", EMBEDDED, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "ANTHROPIC_API_KEY": SECRET},
    )


def test_every_module_logs_through_the_helper() -> None:
    """No module of baton takes structlog's own logger, whose default prints on stdout."""
    baton = Path(__file__).resolve().parent.parent / "baton"
    # The helper, and the forwarder of other libraries' records, which only `configure_logging`
    # installs, once structlog is configured.
    helper = {baton / "_log.py", baton / "runtime" / "logging.py"}
    offending = sorted(
        str(path.relative_to(baton.parent))
        for path in baton.rglob("*.py")
        if path not in helper and "structlog.get_logger(" in path.read_text(encoding="utf-8")
    )
    assert [] == offending


def test_an_embedded_runtime_prints_nothing(tmp_path: Path) -> None:
    """A program that runs actors and sets up no logging gets nothing on stdout or stderr,
    not even for a failed handler and a dead letter."""
    done = run_embedded(tmp_path)
    assert ("", "") == (done.stdout, done.stderr)


def test_a_program_that_sets_logging_up_gets_the_lines_through_logging(tmp_path: Path) -> None:
    """With `logging.basicConfig(...)` the lines come through the program's handler, one
    readable `event key=value` line each under the module's logger, the API key redacted;
    stdout stays empty."""
    done = run_embedded(tmp_path, "--logging")
    lines = done.stderr.splitlines()
    assert "" == done.stdout
    assert "INFO baton.runtime.runtime: actor.started actor=orders actor_type=Orders" in lines
    (failed,) = [line for line in lines if " actor.handler_failed " in line]
    assert failed.startswith("WARNING baton.runtime._cell: actor.handler_failed actor=orders ")
    assert 'error="ValueError: no key [redacted] here"' in failed
    assert 1 == sum(" message.dead_lettered " in line for line in lines)
    assert SECRET not in done.stderr


class Boom(BaseModel):
    pass


class Failing(Actor):
    @handler
    async def boom(self, msg: Boom) -> None:
        raise ValueError(f"no key {SECRET} here")


def host_marker(
    _: object, __: str, event_dict: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """A processor of the program's own, to tell its configuration's lines apart."""
    event_dict["host"] = True
    return event_dict


@pytest.fixture
def host_structlog() -> Iterator[io.StringIO]:
    """A program's own structlog configuration (JSON lines into a buffer), undone after."""
    buffer = io.StringIO()
    structlog.configure(
        processors=[host_marker, structlog.processors.JSONRenderer()],
        logger_factory=structlog.PrintLoggerFactory(buffer),
    )
    yield buffer
    structlog.reset_defaults()


async def test_a_programs_own_structlog_configuration_is_kept(
    host_structlog: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    """baton changes nothing of a program's structlog configuration; its lines go through it,
    with the actor and message they were logged for and the API key redacted."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    before = structlog.get_config()
    processors = list(before["processors"])
    async with Runtime.open(policy=SupervisorPolicy(max_attempts=1)) as rt:
        await rt.spawn("failing", Failing)
        with pytest.raises(HandlerFailedError):
            await rt.ask("failing", Boom())
    after = structlog.get_config()
    lines = [json.loads(line) for line in host_structlog.getvalue().splitlines()]
    (failed,) = [line for line in lines if line["event"] == "actor.handler_failed"]
    assert (before, processors) == (after, after["processors"])
    assert (True, "failing") == (failed["host"], failed["actor"])
    assert "ValueError: no key [redacted] here" == failed["error"]
    assert SECRET not in host_structlog.getvalue()
