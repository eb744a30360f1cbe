"""A conversation's journal replayed under a policy: the cache clock follows the token log's
times (a wait past five minutes costs a 5-minute cache, not a 1-hour one), a new process of
the offline model starts with an empty cache, the agent's own compaction rules decide when a
policy pays for a summary, and a summary is the journaled one where the run asked the same."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from baton.context.conversation import Conversation
from baton.context.payload import ToolSpec
from baton.context.records import dump_record
from baton.context.registry import make_strategy
from baton.context.strategy import ContextBudget
from baton.context.usage import Usage
from baton.models._offline_summaries import compaction_summary
from baton.models.pricing import PRICES
from baton.pipeline._replay_bill import Pricing
from baton.pipeline._replay_calls import JournaledSummaries, LoggedCall, Prefix
from baton.pipeline.cost_replay import ConversationReplay, Replayed

START = 1_800_000_000.0
SYSTEM = "You are the Execute Agent: run the samples and judge them. " * 80
TOOLS: list[ToolSpec] = [
    {
        "name": "Read",
        "description": "Read a workspace file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def journal(rounds: int, steps: int, *, result_chars: int = 4000) -> list[dict[str, Any]]:
    """The records an agent journals for `rounds` rounds of `steps` steps (the last of each a
    final answer, the others a Read with a result of `result_chars` characters)."""
    conversation = Conversation(id="demo")
    records: list[dict[str, Any]] = []
    for r in range(rounds):
        records.append(dump_record(conversation.start_round(f"Round {r}: run the samples.")))
        for k in range(steps):
            content: list[dict[str, Any]] = [{"type": "text", "text": f"Round {r}, step {k}."}]
            results: list[dict[str, Any]] = []
            if k < steps - 1:
                tool_id = f"toolu_{r}_{k}"
                content.append(
                    {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"path": "a"}}
                )
                results.append(
                    {"type": "tool_result", "tool_use_id": tool_id, "content": "x" * result_chars}
                )
            stop = "tool_use" if results else "end_turn"
            response = {"content": content, "stop_reason": stop, "usage": {"output_tokens": 20}}
            records.append(
                {"type": "response", "turn": conversation.next_seq, "response": response}
            )
            step = conversation.append_step(
                content, results, Usage(output_tokens=20), stop_reason=stop
            )
            records.append(dump_record(step))
    return records


def logged(
    turns: int, *, per_round: int, gap: float, processes: Sequence[str] = ("p1",)
) -> list[LoggedCall]:
    """The token log's calls of `journal`: 10 s apart, `gap` seconds between rounds, each
    round made by the next of `processes` (the last one repeating)."""
    calls = []
    for turn in range(turns):
        r = turn // per_round
        calls.append(
            LoggedCall(
                actor="execute",
                conversation="demo",
                turn=turn,
                purpose="turn",
                at=START + turn * 10 + r * gap,
                model="offline-scripted",
                usage=Usage(),
                process=processes[min(r, len(processes) - 1)],
            )
        )
    return calls


async def replay(
    records: list[dict[str, Any]],
    calls: list[LoggedCall],
    *,
    strategy: str = "summarize",
    threshold: int = 150_000,
    per_process: bool = False,
    keep: int = 2,
) -> Replayed:
    budget = ContextBudget(
        context_window=200_000, compact_threshold=threshold, keep_recent_steps=keep
    )
    run = ConversationReplay(
        "execute",
        "demo",
        new_strategy=lambda b: make_strategy(strategy, b),
        budget=budget,
        prefix=Prefix(SYSTEM, TOOLS),
        calls=calls,
        pricing=Pricing("claude-sonnet-5-5", PRICES),
        min_cache_tokens=1024,
        min_compaction_gain=0.1,
        cache_per_process=per_process,
    )
    return await run.run(records)


async def test_a_wait_past_five_minutes_costs_a_five_minute_cache_only() -> None:
    """Ten minutes between rounds instead of one: the 5-minute cache writes again what it had,
    the 1-hour cache reads it back and bills the same as with the short wait."""
    records = journal(2, 4)
    short = await replay(records, logged(8, per_round=4, gap=60))
    long = await replay(records, logged(8, per_round=4, gap=600))
    assert short.tallies["1h"].same_tokens(long.tallies["1h"])
    assert short.tallies["5m"].billed < long.tallies["5m"].billed
    assert short.tallies["5m"].cache_read > long.tallies["5m"].cache_read
    assert 8 == long.tallies["5m"].calls


async def test_a_new_process_of_the_offline_model_starts_with_an_empty_cache() -> None:
    """The second round made by another process: the offline model's cache (in its process)
    is empty then; the API's (across processes) is not."""
    records = journal(2, 4)
    one = logged(8, per_round=4, gap=60)
    two = logged(8, per_round=4, gap=60, processes=("p1", "p2"))
    same = await replay(records, one, per_process=True)
    restarted = await replay(records, two, per_process=True)
    api = await replay(records, two, per_process=False)
    assert same.tallies["composed"].cache_read > restarted.tallies["composed"].cache_read
    assert same.tallies["composed"].same_tokens(api.tallies["composed"])


async def test_a_policy_pays_for_the_summaries_its_compactions_ask_for() -> None:
    """Past a small threshold `summarize` compacts, paying for summary calls; `sliding_window`
    compacts without one; both make every turn call of the journal."""
    records = journal(2, 6)
    calls = logged(12, per_round=6, gap=60)
    summarized = await replay(records, calls, threshold=4_000)
    windowed = await replay(records, calls, strategy="sliding_window", threshold=4_000)
    assert summarized.tallies["5m"].summary_calls >= 1
    assert 12 == summarized.tallies["5m"].calls - summarized.tallies["5m"].summary_calls
    assert (12, 0) == (windowed.tallies["5m"].calls, windowed.tallies["5m"].summary_calls)


async def test_a_server_compaction_is_its_own_call_and_the_turn_is_asked_again() -> None:
    """Past the compact edit's trigger the server answers with its compaction alone (billed
    as its iteration: its summary is output), and the turn is asked again after the block."""
    records = journal(1, 10, result_chars=40_000)
    calls = logged(10, per_round=10, gap=0)
    replayed = await replay(records, calls, strategy="server", threshold=50_000, keep=8)
    tally = replayed.tallies["composed"]
    assert tally.summary_calls >= 1
    assert 10 + tally.summary_calls == tally.calls
    assert 10 * 20 < tally.output_tokens  # the turns' output, and the compactions' summaries


def test_a_summary_is_the_journaled_one_where_the_run_asked_the_same() -> None:
    """Same compaction and last step: the journaled text; another step: the nearest journaled
    compaction's text as a stand-in; none journaled: the offline model's summary."""
    records = [
        {"type": "summary", "compaction": 0, "through_seq": 7, "text": "first"},
        {"type": "summary", "compaction": 1, "through_seq": 15, "text": "second"},
    ]
    summaries = JournaledSummaries(records, "execute")
    payload: Any = {"max_tokens": 10, "messages": [{"role": "user", "content": "Summarize."}]}
    assert ("first", True) == summaries.answer(0, 7, payload)
    assert ("first", False) == summaries.answer(0, 9, payload)
    assert ("second", False) == summaries.answer(4, 30, payload)
    offline = compaction_summary(payload, "execute")
    assert (offline, False) == JournaledSummaries([], "execute").answer(0, 7, payload)


def test_a_server_compaction_is_the_journaled_block_where_the_run_compacted() -> None:
    """The server's block the run journaled answers the same compaction at the same turn;
    elsewhere none (the simulation writes one)."""
    block = {"type": "compaction", "content": "the server's summary"}
    step = {"type": "step", "step": {"seq": 0}}
    records: list[dict[str, Any]] = [
        step,
        {**step, "step": {"seq": 1}},
        {"type": "compaction", "by": "server", "block": block, "server_output_tokens": 42},
    ]
    summaries = JournaledSummaries(records, "execute")
    assert (block, 42) == summaries.server_block(0, 2)
    assert None is summaries.server_block(0, 3)
    assert None is summaries.server_block(1, 2)
