"""`stride` and `strip_batch_tokens` in `[actors.<name>]`: validated, defaulted for Init and
Execute, and handed to the strategy the agent builds."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from baton import Actor
from baton.agents.agent_loop import AgentLoop
from baton.agents.agent_setup import AgentSetup
from baton.agents.journal import FileJournalStore
from baton.context.summarize import SummarizeStrategy
from baton.errors import ConfigError
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.config import load_config


class _Sink:
    def emit(self, event: str, **fields: Any) -> None:
        """Token-log lines are not what these tests check."""


def test_init_and_execute_strip_in_batches_by_default() -> None:
    """With no file, Init and Execute take batched stripping; the Scheduler strips per turn."""
    config = load_config(None, environ={})
    options = {name: agent.strategy_options for name, agent in config.actors.items()}
    assert {
        "init": {"stride": 8, "strip_batch_tokens": 30_000, "tool_result_clearing": "client"},
        "execute": {"stride": 10, "strip_batch_tokens": 40_000, "tool_result_clearing": "client"},
        "scheduler": {"stride": 1, "strip_batch_tokens": None, "tool_result_clearing": "client"},
    } == options


def test_the_options_are_read_from_baton_toml(tmp_path: Path) -> None:
    """A table's `stride` and `strip_batch_tokens` override the defaults, key by key."""
    (tmp_path / "baton.toml").write_text(
        '[actors.execute]\nstride = 4\nstrip_batch_tokens = 9000\ntool_result_clearing = "server"\n'
    )
    config = load_config(tmp_path, environ={})
    assert {
        "stride": 4,
        "strip_batch_tokens": 9000,
        "tool_result_clearing": "server",
    } == config.agent("execute").strategy_options


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ("[actors.execute]\nstride = 0\n", "actors.execute.stride"),
        ("[actors.init]\nstrip_batch_tokens = -5\n", "actors.init.strip_batch_tokens"),
        ("[actors.init]\nstrip_batch = 5\n", "actors.init.strip_batch"),
    ],
)
def test_bad_or_unknown_option_keys_are_refused_by_name(
    tmp_path: Path, toml: str, named: str
) -> None:
    """Out-of-range values and misspelt keys stop the config with the key's dotted path."""
    (tmp_path / "baton.toml").write_text(toml)
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_config(tmp_path, environ={})


def test_a_strategy_takes_only_the_options_it_has(tmp_path: Path) -> None:
    """Execute switched to another strategy keeps its other defaults without an error."""
    (tmp_path / "baton.toml").write_text(
        "[actors.execute]\nstrategy = 'sliding_window'\n[actors.init]\nstrategy = 'extract_state'\n"
    )
    config = load_config(tmp_path, environ={})
    assert {} == config.agent("execute").strategy_options
    assert {"stride": 8} == config.agent("init").strategy_options


def test_the_agent_builds_its_strategy_with_the_configured_options(tmp_path: Path) -> None:
    """The default Execute agent's strategy is `summarize` with the table's batch settings."""
    setup = AgentSetup(
        role="execute",
        config=load_config(None, environ={}).agent("execute"),
        model=ScriptedModel(Script.model_validate({"actors": {}})),
        system_prompt="You are a test agent.",
        journal=FileJournalStore(tmp_path),
        token_log=_Sink(),
    )
    strategy = AgentLoop(setup, cast(Actor, None)).new_strategy()
    assert isinstance(strategy, SummarizeStrategy)
    assert (10, 40_000) == (strategy.stride, strategy.strip_batch_tokens)
