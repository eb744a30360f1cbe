"""`baton cost --what-if` per agent: a finished offline run's own policy, replayed, bills what
its token log logged, to the token; an offline run is priced at the agent's configured model;
each agent is billed under every policy once, the run's first."""

from __future__ import annotations

from pathlib import Path

from baton.agents.journal import FileJournalStore
from baton.context.strategy import ContextBudget
from baton.context.usage import Usage
from baton.models.pricing import PRICES
from baton.pipeline._replay_calls import LoggedCall
from baton.pipeline.config import BatonConfig, load_config
from baton.pipeline.summaries import summary_schema_for
from baton.pipeline.what_if import agent_what_if, pricing_for
from baton.pipeline.what_if_policies import policies_for
from baton.testing import read_token_log
from tests.pipeline.test_cost_cap import uncapped_run


async def test_the_runs_own_policy_replayed_bills_what_the_token_log_logged(
    tmp_path: Path,
) -> None:
    """Every agent of a finished offline run (its model priced by baton.toml): the run's
    policy, replayed, makes the logged calls and bills their tokens and dollars exactly."""
    await uncapped_run(tmp_path)
    config = load_config(tmp_path)
    lines = read_token_log(tmp_path)
    calls = [LoggedCall.of(line) for line in lines if line["event"] == "model.call"]
    journal = FileJournalStore(tmp_path)
    for actor in ("init", "execute", "scheduler"):
        chosen = await journal.conversations(actor)
        result = await agent_what_if(
            tmp_path, config, journal, actor, conversations=chosen, calls=calls
        )
        used = next(row for row in result.rows if row.used)
        assert result.logged.calls == len([c for c in calls if c.actor == actor])
        assert result.logged == used.bill
        assert (0.0, 0.0) == (result.difference_billed_pct, result.difference_cost_pct)
        assert "offline-scripted" == result.priced_at  # priced by its [prices] row
        assert {row.policy for row in result.rows} >= {"used", "keep-all", "per-turn-strip"}


def test_an_offline_run_is_priced_at_the_configured_model() -> None:
    """The offline model costs nothing: its calls are priced at the agent's model; a call of
    a priced model is priced at that model."""
    config = BatonConfig().agent("execute")

    def call(model: str) -> LoggedCall:
        return LoggedCall("execute", "demo", 0, "turn", 0.0, model, Usage())

    offline, _ = pricing_for("execute", config, [call("offline-scripted")], PRICES)
    claude, _ = pricing_for("execute", config, [call("claude-opus-5-5")], PRICES)
    assert (config.model, "claude-opus-5-5") == (offline.model, claude.model)


def test_each_policy_is_listed_once_the_runs_first() -> None:
    """Execute's default (summarize in batches): the run's policy first, then the baselines,
    the other strategies and the server's; the one equal to the run's is not repeated."""
    policies = policies_for(BatonConfig().agent("execute"), summary_schema_for("execute"))
    assert [
        "used",
        "keep-all",
        "per-turn-strip",
        "summarize-per-turn",
        "sliding_window",
        "extract_state",
        "server-compaction",
        "server-clearing",
    ] == [policy.key for policy in policies]
    assert [True] + [False] * 7 == [policy.used for policy in policies]
    assert "summarize (stride 10, strip_batch_tokens 40,000)" == policies[0].label


def test_server_compaction_compacts_no_earlier_than_the_api_allows() -> None:
    """A threshold under the API's least trigger (50,000) compacts at 50,000 instead."""
    config = BatonConfig().agent("init").model_copy(update={"compact_threshold": 24_000})
    policy = next(p for p in policies_for(config, summary_schema_for("init")) if p.server)
    strategy = policy.build(ContextBudget.model_validate(config, from_attributes=True))
    assert ("server-compaction", 50_000) == (policy.key, strategy.budget.compact_threshold)
