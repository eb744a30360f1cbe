"""What a person sees of `baton run` (README.md, "What `baton run` shows"): its progress.

The view is fed in process: token-log records as the writer hands them to followers
(`TokenLog.follow`, the same stream `/tokens?follow=true` serves; with a Redis mailbox also
the other processes' records, from the stream they share: docs/token-log.md, "Across
processes") and the scheduler's
scenario states, asked for when a handoff or a scenario end says they changed. On a
terminal it is a live panel per scenario (rich); elsewhere (a pipe, a file) one plain line
per handoff, compaction, restart, dead letter or phase change, with no escape codes. Either
way `baton run` ends with the summary (`_run_summary.py`).
"""

from __future__ import annotations

import sys
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    asynccontextmanager,
    contextmanager,
    nullcontext,
    suppress,
)
from pathlib import Path
from typing import Any, TextIO

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream
from rich.console import Console, Group, RenderableType
from rich.file_proxy import FileProxy
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from baton.errors import BatonError
from baton.models.pricing import PRICES
from baton.pipeline.host import Pipeline
from baton.pipeline.messages import ScenarioQuery
from baton.pipeline.scenario_state import ACTIVE_PHASES, SCHEDULER, ScenarioState
from baton.runtime.runtime import Runtime
from baton.runtime.token_log import TokenLog
from baton.server._render import render_scenario
from baton.server._run_summary import AgentProgress, RunTally, counts_line, summary_lines
from baton.server._scenario_reports import write_end_report

_ASK_TIMEOUT = 5.0
_FINAL_ASK_TIMEOUT = 2.0  # a stopping run must not wait long for a busy scheduler
_REFRESHES_PER_SECOND = 4
_BAR_WIDTH = 24


def _other_processes(
    token_log: TokenLog,
) -> AbstractAsyncContextManager[MemoryObjectReceiveStream[dict[str, Any]] | None]:
    if token_log.relay is None:
        return nullcontext(None)
    # Only with a Redis mailbox: a process without one loads no redis-py.
    from baton.server._token_source import other_processes  # noqa: PLC0415

    return other_processes(token_log)


def short_tokens(count: int) -> str:
    """`412K`, `1.2M`, `950`: a token count at a glance."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 1_000:
        return f"{count / 1_000:.0f}K"
    return str(count)


def fill_figure(context_tokens: int, threshold: int, width: int = _BAR_WIDTH) -> str:
    """`[#########-------] 412K / 700K`: the context against the compaction threshold."""
    share = min(max(context_tokens / threshold, 0.0), 1.0) if threshold > 0 else 0.0
    filled = round(share * width)
    bar = "#" * filled + "-" * (width - filled)
    return f"[{bar}] {short_tokens(context_tokens)} / {short_tokens(threshold)}"


class _Screen(ABC):
    """Where progress goes: plain lines (`_PlainScreen`) or a live panel (`_LiveScreen`)."""

    out: TextIO

    @abstractmethod
    def update(self, view: RunView, line: str | None) -> None:
        """Show the view after a record, with `line` (a plain progress line) if it has one."""

    def stop(self) -> None:  # noqa: B027 - a no-op unless the screen holds the terminal
        """Leave the screen as it is, so that what follows prints below it."""


class _PlainScreen(_Screen):
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def update(self, view: RunView, line: str | None) -> None:
        if line is not None:
            stamp = time.strftime("%H:%M:%S")
            print(f"{stamp} {line}", file=self.out, flush=True)


class _LiveScreen(_Screen):
    def __init__(self, out: TextIO) -> None:
        self._console = Console(file=out, highlight=False)
        # Rich's thread draws the latest panel a few times a second; the panel is built on
        # the event loop and never changed after, so the thread never reads a tally that is
        # being updated, and the last state always reaches the screen.
        self._live = Live(
            console=self._console,
            auto_refresh=True,
            refresh_per_second=_REFRESHES_PER_SECOND,
            transient=False,
            redirect_stdout=False,
            # Warnings written meanwhile print above the panel, when they share its terminal.
            redirect_stderr=sys.stderr.isatty(),
        )
        # The banner and outcome lines are printed above the panel, not through it.
        self.out = FileProxy(self._console, out)  # type: ignore[assignment]
        self._shown = False  # shown once the run has started: a refused start prints nothing

    def update(self, view: RunView, line: str | None) -> None:
        self._live.update(render_panels(view))
        if not self._shown:
            self._shown = True
            self._live.start(refresh=True)

    def final(self, view: RunView) -> None:
        if self._shown:
            self._live.update(render_panels(view), refresh=True)

    def stop(self) -> None:
        if self._shown:
            self._live.stop()


def render_panels(view: RunView) -> RenderableType:
    """One panel per scenario: its phase, and a row per agent with its latest figures."""
    tally = view.tally
    scenarios: dict[str, list[AgentProgress]] = {name: [] for name in view.scenarios()}
    for (scenario, _), agent in tally.agents.items():
        scenarios.setdefault(scenario, []).append(agent)
    if not scenarios:
        if view.submitting:
            return Text(f"baton: submitting {', '.join(view.submitting)}…")
        return Text("baton: waiting for work (a scenario submitted, a message to an actor)")
    panels: list[RenderableType] = []
    for scenario, agents in scenarios.items():
        state = view.states.get(scenario)
        title = (
            scenario
            if state is None
            else (f"{scenario} · {state.phase} · iteration {state.iteration}")
        )
        working = max(agents, key=lambda agent: agent.seen, default=None)
        table = Table(box=None, expand=False, pad_edge=False)
        for column in ("", "agent", "model", "step", "last tool", "tokens", "context"):
            table.add_column(column, no_wrap=True)
        for agent in sorted(agents, key=lambda agent: agent.actor):
            tokens = (
                f"in {short_tokens(agent.input_tokens)} · cached "
                f"{short_tokens(agent.cached_tokens)} · out {short_tokens(agent.output_tokens)}"
            )
            context = fill_figure(agent.context_tokens, agent.compact_threshold)
            if agent.compactions:
                context += f" ({agent.compactions} compacted)"
            cells = (
                ">" if agent is working else " ",
                agent.actor,
                agent.model,
                str(agent.turn),
                agent.last_tool or "-",
                tokens,
                context,
            )
            # Text, not strings: a bar's `[###--]` would be read as console markup.
            table.add_row(
                *(Text(cell) for cell in cells), style=None if agent is working else "dim"
            )
        body: RenderableType = table
        note = _state_note(scenario, state)
        if note is not None:
            body = Group(table, Text(note))
        panels.append(Panel(body, title=Text(title), title_align="left", expand=False))
    footer = Text(counts_line(tally))
    return Group(*panels, footer)


def _state_note(scenario: str, state: ScenarioState | None) -> str | None:
    """What the scenario waits for, or why it ended, under its panel."""
    if state is None:
        return None
    if state.phase == "awaiting_approval":
        return f"waiting for `baton approve {scenario}` (or `baton reject {scenario} --reason R`)"
    if state.waiting:
        return state.waiting
    if state.phase in ("failed", "stopped") and state.reason:
        return f"{state.phase}: {state.reason}"
    return None


def state_line(state: ScenarioState) -> str:
    """A scenario's phase as a progress line; an end that is not a success says why."""
    line = f"{state.scenario}: {state.phase} (iteration {state.iteration})"
    if state.phase in ("failed", "stopped") and state.reason:
        line += f" — {state.reason}"
    return line


class RunView:
    """`baton run`'s progress and summary on `out`: live on a terminal, else plain lines."""

    def __init__(self, out: TextIO, *, workspace: Path, live: bool) -> None:
        self.tally = RunTally()
        self.states: dict[str, ScenarioState] = {}
        self.workspace = workspace
        self._target = out
        self.live = live  # the panel (a terminal), or plain lines
        self._screen: _Screen | None = None
        self.started = False  # the runtime came up: the summary is printed at the end
        self._changed = anyio.Event()
        self._moved: set[str] = set()  # scenarios whose phase changed while this process ran
        self.reports: dict[str, Path] = {}  # the report written as each scenario ended
        self.outputs: dict[str, list[str]] = {}  # outputs listed from a bucket, by scenario
        self.ended: set[str] = set()  # scenarios whose `ended` line was printed
        self.submitting: tuple[str, ...] = ()  # what `--submit` names, until it is seen

    def scenarios(self) -> dict[str, ScenarioState]:
        """The states of the scenarios this process worked on (not every one on record)."""
        worked = {scenario for scenario, _ in self.tally.agents} | self._moved
        return {name: state for name, state in self.states.items() if name in worked}

    @classmethod
    def for_output(cls, out: TextIO, *, workspace: Path, json_logs: bool) -> RunView:
        """Live when `out` is a terminal and the log is not on the same terminal."""
        isatty = getattr(out, "isatty", None)
        live = bool(isatty and isatty()) and not json_logs
        return cls(out, workspace=workspace, live=live)

    @property
    def out(self) -> TextIO:
        """Where `baton run`'s own lines (banner, submitted, ended) go."""
        return self._screen.out if self._screen is not None else self._target

    def say(self, line: str) -> None:
        """Print one of `baton run`'s own lines now (above the live panel on a terminal)."""
        print(line, file=self.out, flush=True)

    def seen(self, state: ScenarioState) -> None:
        """A state this process learned of first hand (a submit's answer): shown at once."""
        self.states[state.scenario] = state
        self._moved.add(state.scenario)
        if self._screen is not None:
            self._screen.update(self, None)

    @contextmanager
    def showing(self) -> Iterator[RunView]:
        """Show progress for the block; print the summary after it if the run started."""
        self._screen = _LiveScreen(self._target) if self.live else _PlainScreen(self._target)
        try:
            yield self
        finally:
            screen, self._screen = self._screen, None
            if isinstance(screen, _LiveScreen):
                screen.final(self)
            screen.stop()
            if self.started:
                for line in summary_lines(
                    self.tally,
                    self.scenarios().values(),
                    workspace=self.workspace,
                    reports=self.reports,
                    outputs=self.outputs,
                ):
                    print(line, file=self._target, flush=True)

    @asynccontextmanager
    async def following(self, token_log: TokenLog) -> AsyncIterator[None]:
        """Fold in every record `token_log` emits while the block runs, and with a Redis
        mailbox every record the deployment's other processes emit meanwhile."""
        async with (
            _other_processes(token_log) as others,
            token_log.follow() as records,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(self._fold, records)
            if others is not None:
                tg.start_soon(self._fold, others)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
                # What the writer handed over before the block ended still counts.
                with suppress(anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    while True:
                        self._record(records.receive_nowait())

    async def _fold(self, records: MemoryObjectReceiveStream[dict[str, Any]]) -> None:
        async for record in records:
            self._record(record)

    def _record(self, record: dict[str, Any]) -> None:
        line = self.tally.add(record)
        if record.get("event") in ("handoff.sent", "handoff.received"):
            self._changed.set()
        if self._screen is not None:
            self._screen.update(self, line)

    async def watch_scenarios(
        self,
        runtime: Runtime,
        pipeline: Pipeline,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Keep the scenario states current: asked at start, after handoffs, and whenever
        the Scheduler changes a state (a phase, a wait for the model, an end)."""
        self.started = True
        if self._screen is not None:
            self._screen.update(self, None)
        task_status.started()
        while runtime.is_alive(SCHEDULER):
            ended, changed = pipeline.next_scenario_end(), pipeline.next_change()
            self._changed = anyio.Event()
            for state in pipeline.take_changes():
                self._apply(state)
            await self.refresh_states(runtime, _ASK_TIMEOUT)
            await self.report_ended(runtime, pipeline)
            async with anyio.create_task_group() as race:
                race.start_soon(_set_after, ended, self._changed)
                race.start_soon(_set_after, changed, self._changed)
                await self._changed.wait()
                race.cancel_scope.cancel()

    async def report_ended(self, runtime: Runtime, pipeline: Pipeline) -> None:
        """Say how each scenario that ended since the last call ended (`ended NAME: phase —
        reason`, in every mode), write its report and say where."""
        prices = pipeline.spend.prices if pipeline.spend is not None else PRICES
        workspace = runtime.workspace or self.workspace
        for state in pipeline.take_ended():
            self.states[state.scenario] = state
            self._moved.add(state.scenario)
            self.ended.add(state.scenario)
            self.say(f"ended {render_scenario(state)}")
            # Taken is taken: a stop arriving meanwhile (idleness, a signal) must not lose
            # the report, nor leave it to the final call, which no longer sees this end.
            with anyio.CancelScope(shield=True):
                path = await write_end_report(
                    runtime.token_log, workspace, state.scenario, prices, storage=pipeline.storage
                )
            if path is None:
                continue
            self.reports[state.scenario] = path
            self._moved.add(state.scenario)
            if self._screen is not None:
                self._screen.update(self, f"{state.scenario}: {state.phase} · report {path}")

    async def refresh_states(self, runtime: Runtime, timeout: float = _FINAL_ASK_TIMEOUT) -> None:
        """Ask the scheduler for every scenario's state; a failed ask keeps the last known."""
        if not runtime.is_alive(SCHEDULER):
            return
        try:
            states = await runtime.ask(SCHEDULER, ScenarioQuery(), timeout=timeout)
        except BatonError:
            return
        for state in states or ():
            self._apply(state)

    def _apply(self, state: ScenarioState) -> None:
        """Take `state` as the scenario's; say what changed (its phase, its wait)."""
        before = self.states.get(state.scenario)
        self.states[state.scenario] = state
        active = state.phase in ACTIVE_PHASES
        if active and state.waiting != (before.waiting if before is not None else None):
            self._moved.add(state.scenario)
            waiting = state.waiting or "no longer waiting"
            if self._screen is not None:
                self._screen.update(self, f"{state.scenario}: {waiting}")
        if before is not None and (before.phase, before.iteration) == (
            state.phase,
            state.iteration,
        ):
            return
        # First seen: one an earlier process finished is not this run's; an active one is,
        # and its `submitted` line already said `designing`.
        if before is None and not active:
            return
        self._moved.add(state.scenario)
        news = before is not None or state.phase != "designing"
        if self._screen is not None:
            self._screen.update(self, state_line(state) if news else None)


async def _set_after(source: anyio.Event, target: anyio.Event) -> None:
    await source.wait()
    target.set()
