"""`baton cost [--what-if]`: what a run's model calls billed, per agent, and with `--what-if`
what the same run would have billed under other context policies (README.md, "What a run
would have cost"; docs/context.md, "What a run would have cost").

It reads the workspace's journal and token log directly, so no runtime needs to be running.
Every `model.call` line counts: a line that is not JSON is named with its file and line
number, never skipped, since the comparison with the logged bill would silently drift.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from baton.agents.journal import FileJournalStore, JournalStore
from baton.agents.messages import RUN_SEPARATOR, scenario_of
from baton.errors import StateFileError, UsageError
from baton.pipeline._replay_calls import LoggedCall
from baton.pipeline.config import BatonConfig, load_config
from baton.pipeline.defaults import DEFAULT_AGENTS
from baton.pipeline.errors import CommandLineError
from baton.pipeline.what_if import AgentWhatIf, Bill, agent_what_if, logged_bill, pricing_for
from baton.runtime.settings import redact_url
from baton.server._cost_render import render_bills, render_what_if
from baton.server._log_location import checked_token_log
from baton.server._tail_command import redis_source
from baton.server._tail_filters import log_lines

if TYPE_CHECKING:
    from baton.server._token_source import TokenSource

Print = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class CostOptions:
    """What `baton cost` was asked to show."""

    workspace: Path
    what_if: bool = False
    scenario: str | None = None  # NAME: its every run; NAME@N: that run
    json: bool = False
    mailbox: str | None = None  # redis://...: the deployment's journals and token stream


def call_of(raw: bytes | str, where: str, fix: str) -> LoggedCall | None:
    """The call a token-log line records (None: another event, or a call of no
    conversation); `StateFileError` naming `where` (and saying `fix`) for a line that is
    not a record."""
    try:
        record = json.loads(raw)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        raise StateFileError(where, "is not a JSON object (cut short or changed)", fix)
    if record.get("event") != "model.call" or record.get("conversation") is None:
        return None
    try:
        return LoggedCall.of(record)
    except ValueError as exc:
        raise StateFileError(where, f"is {exc}", fix) from None


def read_calls(path: Path) -> list[LoggedCall]:
    """Every `model.call` of the token log at `path`, rotated files first; `StateFileError`
    naming the file and line of one that cannot be read. Blocks: it reads the files."""
    calls: list[LoggedCall] = []
    for file, number, raw in log_lines(path):
        call = call_of(raw, f"{file}:{number}", _FILE_FIX)
        if call is not None:
            calls.append(call)
    return calls


_FILE_FIX = (
    "remove that line (or move the file aside) and run `baton cost` again; the bill is the "
    "sum of every model call the token log holds"
)


async def stream_calls(source: TokenSource) -> list[LoggedCall]:
    """Every `model.call` of the deployment's token-log stream (every process's lines),
    oldest first; `StateFileError` naming the entry of one that cannot be read."""
    fix = (
        "delete that entry (XDEL), or read this host's token log without --mailbox; the bill "
        "is the sum of every model call the log holds"
    )
    calls = []
    async for entry, line in source.history():
        call = call_of(line, f"entry {entry} of the stream {source.key}", fix)
        if call is not None:
            calls.append(call)
    return calls


def in_scope(conversation: str, scenario: str | None) -> bool:
    """Whether `conversation` is one `--scenario` asks for (every one without it)."""
    if scenario is None:
        return True
    if RUN_SEPARATOR in scenario:
        name, _, run = scenario.partition(RUN_SEPARATOR)
        return conversation == (name if run == "1" else scenario)
    return scenario_of(conversation) == scenario


async def _conversations(
    journal: JournalStore, where: str, scenario: str | None
) -> dict[str, list[str]]:
    """Each pipeline agent's journaled conversations `--scenario` asks for (`where` names
    the journal's home, for the error)."""
    found: dict[str, list[str]] = {}
    known: set[str] = set()
    for actor in DEFAULT_AGENTS:
        every = await journal.conversations(actor)
        known.update(every)
        chosen = [c for c in every if in_scope(c, scenario)]
        if chosen:
            found[actor] = chosen
    if not known:
        raise UsageError(
            f"no journal in {where}: nothing to replay — run a scenario there with "
            "`baton run` first (the journal holds every reply and tool result of a run)"
        )
    if not found:
        raise CommandLineError(
            f"unknown scenario {scenario!r} — known: {', '.join(sorted(known))} (the "
            "conversations in the journal)"
        )
    return found


def logged_bills(
    config: BatonConfig, conversations: dict[str, list[str]], calls: list[LoggedCall]
) -> list[dict[str, Any]]:
    """Per agent, its logged calls' bill, priced as `--what-if` prices it."""
    bills = []
    for actor, chosen in conversations.items():
        own = [c for c in calls if c.actor == actor and c.conversation in chosen]
        pricing, _ = pricing_for(actor, config.agent(actor), own, config.price_table)
        bills.append(
            {
                "actor": actor,
                "priced_at": pricing.model,
                "logged_models": sorted({c.model for c in own}),
                "logged": Bill.of(logged_bill(own, pricing)).model_dump(),
            }
        )
    return bills


async def cost(options: CostOptions, out: Print) -> None:
    """Print the logged bill of `options.workspace`'s run(s), per agent; with `what_if`,
    each policy's bill of the same run beside it. With `mailbox`, the journals and the
    token log are the deployment's, in its Redis."""
    workspace = options.workspace
    if not await anyio.Path(workspace).is_dir():
        raise UsageError(f"{workspace} is not a directory — give the workspace with --workspace")
    config = await anyio.to_thread.run_sync(load_config, workspace)
    if options.mailbox is None:
        log = await anyio.to_thread.run_sync(checked_token_log, workspace)
        calls = await anyio.to_thread.run_sync(read_calls, log)
        journal = FileJournalStore(workspace)
        out(await _shown(options, config, journal, str(journal.root), calls))
        return
    url, prefix = await anyio.to_thread.run_sync(redis_source, workspace, options.mailbox, "cost")
    # Only with a Redis URL: `baton cost` on the files loads no redis-py.
    from baton.agents.redis_journal import RedisJournalStore  # noqa: PLC0415
    from baton.server._token_source import TokenSource  # noqa: PLC0415

    async with TokenSource.open(url, prefix) as source:
        calls = await stream_calls(source)
        # Read only: no lease is taken, so a running deployment is not held up.
        store = RedisJournalStore(source.client, owner="baton-cost", prefix=prefix)
        out(await _shown(options, config, store, f"Redis at {redact_url(url)}", calls))


async def _shown(
    options: CostOptions,
    config: BatonConfig,
    journal: JournalStore,
    where: str,
    calls: list[LoggedCall],
) -> str:
    """What `baton cost` prints, from the journal (`where` it is) and the logged `calls`."""
    conversations = await _conversations(journal, where, options.scenario)
    if not options.what_if:
        bills = logged_bills(config, conversations, calls)
        return json.dumps({"agents": bills}, indent=2) if options.json else render_bills(bills)
    results: list[AgentWhatIf] = []
    for actor, chosen in conversations.items():
        results.append(
            await agent_what_if(
                options.workspace, config, journal, actor, conversations=chosen, calls=calls
            )
        )
    if options.json:
        return json.dumps({"agents": [r.model_dump() for r in results]}, indent=2)
    return render_what_if(results, workspace=options.workspace, scenario=options.scenario)
