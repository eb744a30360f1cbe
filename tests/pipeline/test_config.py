"""baton.toml: the default agents, overrides, env overrides, and errors that name the key."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from baton import Actor, Runtime
from baton.errors import ConfigError
from baton.pipeline.config import load_config, parse_config
from tests.pipeline.test_offline_model import unblock


class Idle(Actor):
    pass


def test_defaults_are_the_current_models_with_absolute_thresholds() -> None:
    """With no file, the agents run the current 5.5 models in 1M windows, compacting at 150K
    (init, scheduler) and 700K (execute); Init and Execute think adaptively."""
    config = load_config(None, environ={})
    table = {
        name: (
            a.model,
            a.context_window,
            a.compact_threshold,
            a.keep_recent_steps,
            a.strategy,
            a.thinking,
        )
        for name, a in config.actors.items()
    }
    assert {
        "init": ("claude-opus-5-5", 1_000_000, 150_000, 3, "summarize", "adaptive"),
        "execute": ("claude-sonnet-5-5", 1_000_000, 700_000, 5, "summarize", "adaptive"),
        "scheduler": ("claude-haiku-5-5", 1_000_000, 150_000, 3, "summarize", "off"),
    } == table


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ("[actors.init]\nthinking = 'sometimes'\n", "actors.init.thinking"),
        ("[actors.init]\nthinking = 512\n", "actors.init.thinking"),
        ("[actors.init]\neffort = 'extreme'\n", "actors.init.effort"),
        ("[actors.init]\nthinking = 20000\nmax_output_tokens = 16000\n", "thinking budget"),
    ],
)
def test_a_bad_thinking_setting_is_refused_naming_it(tmp_path: Path, toml: str, named: str) -> None:
    """thinking takes adaptive, off or a budget of at least 1024 below max_output_tokens;
    effort takes the API's levels."""
    (tmp_path / "baton.toml").write_text(toml)
    with pytest.raises(ConfigError, match=named):
        load_config(tmp_path, environ={})


def test_a_thinking_budget_is_a_number_of_tokens(tmp_path: Path) -> None:
    """thinking = 8000 (for a model that takes manual budgets) is kept as a number."""
    (tmp_path / "baton.toml").write_text(
        '[actors.init]\nmodel = "claude-opus-4-5"\nthinking = 8000\neffort = "high"\n'
    )
    init = load_config(tmp_path, environ={}).agent("init")
    assert (8000, "high") == (init.thinking, init.effort)


def test_file_values_override_defaults_per_key(tmp_path: Path) -> None:
    """A key set in baton.toml replaces that default only; the rest keep theirs."""
    (tmp_path / "baton.toml").write_text(
        '[actors.execute]\ncompact_threshold = 500000\nstrategy = "sliding_window"\n'
        "[runtime]\nmailbox_capacity = 7\n"
    )
    config = load_config(tmp_path, environ={})
    execute = config.agent("execute")
    assert (500_000, "sliding_window", 1_000_000) == (
        execute.compact_threshold,
        execute.strategy,
        execute.context_window,
    )
    assert 7 == config.runtime.mailbox_capacity


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ("[runtime]\nmailbx = 'memory'\n", "runtime.mailbx"),
        ("[actors.execute]\nmodle = 'x'\n", "actors.execute.modle"),
        ("[logz]\nx = 1\n", "logz"),
    ],
)
def test_unknown_keys_are_errors_naming_the_key(tmp_path: Path, toml: str, named: str) -> None:
    """A misspelt key is refused with its dotted path in the message."""
    (tmp_path / "baton.toml").write_text(toml)
    with pytest.raises(ConfigError, match=f"unknown key '{named}'"):
        load_config(tmp_path, environ={})


def test_environment_overrides_win_and_are_typed(tmp_path: Path) -> None:
    """BATON_SECTION__KEY overrides the file; JSON-looking values are parsed."""
    (tmp_path / "baton.toml").write_text("[actors.init]\nmodel = 'from-file'\n")
    config = load_config(
        tmp_path,
        environ={
            "BATON_ACTORS__INIT__MODEL": "from-env",
            "BATON_RUNTIME__MAILBOX_CAPACITY": "9",
            "BATON_WORKSPACE": "/ignored",
        },
    )
    assert ("from-env", 9) == (config.agent("init").model, config.runtime.mailbox_capacity)


def test_bad_environment_value_names_its_source() -> None:
    """An invalid override is reported as coming from the environment."""
    with pytest.raises(ConfigError, match="BATON_"):
        load_config(None, environ={"BATON_RUNTIME__MAILBOX_CAPACITY": "0"})


def test_threshold_must_sit_below_the_window() -> None:
    """compact_threshold >= context_window is refused with both numbers."""
    with pytest.raises(ConfigError, match="compact_threshold"):
        parse_config({"actors": {"init": {"compact_threshold": 1_000_000}}})


def test_invalid_toml_is_a_config_error(tmp_path: Path) -> None:
    """A syntax error in baton.toml is a ConfigError naming the file."""
    (tmp_path / "baton.toml").write_text("[runtime\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(tmp_path, environ={})


def test_an_agent_without_config_is_named() -> None:
    """Asking for an agent that has no section raises ConfigError with the section to add."""
    with pytest.raises(ConfigError, match=r"\[actors.critic\]"):
        parse_config({}).agent("critic")


async def test_runtime_open_reads_the_workspace_config(tmp_path: Path) -> None:
    """`Runtime.open(workspace)` applies baton.toml (here: the mailbox capacity)."""
    (tmp_path / "baton.toml").write_text("[runtime]\nmailbox_capacity = 3\n")
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("idle", Idle)
        assert 3 == rt.status()[0].mailbox_capacity


def test_a_config_file_that_is_not_utf8_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """baton.toml with a byte that is not UTF-8 is a ConfigError naming the file and offset."""
    (tmp_path / "baton.toml").write_bytes(b'[runtime]\nmailbox = "\xff"\n')
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, environ={})
    message = str(raised.value)
    assert (True, True, 1) == (
        str(tmp_path / "baton.toml") in message,
        "not UTF-8" in message,
        len(message.splitlines()),
    )


@pytest.mark.parametrize("value", ["5", "'init'", "[1, 2]", "true"])
def test_an_actors_value_that_is_not_a_table_is_a_config_error(tmp_path: Path, value: str) -> None:
    """`actors = 5` (or a string, a list) is refused naming `actors`, not a TypeError."""
    (tmp_path / "baton.toml").write_text(f"actors = {value}\n")
    with pytest.raises(ConfigError, match="actors: "):
        load_config(tmp_path, environ={})


def test_a_directory_for_baton_toml_is_an_error_naming_it(tmp_path: Path) -> None:
    """A directory named baton.toml is not passed over as if there were no file."""
    (tmp_path / "baton.toml").mkdir()
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, environ={})
    expected = f"{tmp_path / 'baton.toml'} is a directory, not a config file — move it aside"
    assert expected == str(raised.value)


async def test_a_named_pipe_for_baton_toml_is_refused_without_waiting(tmp_path: Path) -> None:
    """A FIFO named baton.toml is refused within the deadline, naming it, never waited on."""
    fifo = tmp_path / "baton.toml"
    os.mkfifo(fifo)
    try:
        with anyio.fail_after(5), pytest.raises(ConfigError) as raised:
            await anyio.to_thread.run_sync(
                lambda: load_config(tmp_path, environ={}), abandon_on_cancel=True
            )
    finally:
        unblock(fifo)
    assert f"{fifo} is a named pipe, not a config file — move it aside" == str(raised.value)


def test_a_config_nested_too_deep_is_a_config_error(tmp_path: Path) -> None:
    """Arrays nested past the TOML parser's stack are a ConfigError naming the file."""
    (tmp_path / "baton.toml").write_text("x = " + "[" * 2000 + "]" * 2000 + "\n")
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path, environ={})
    assert f"{tmp_path / 'baton.toml'} nests arrays or tables too deep" in str(raised.value)
