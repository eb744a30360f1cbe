"""ScriptedModel: script order, resumable turns, usage figures and the cache simulation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from baton.context.errors import InvalidRequestError
from baton.context.payload import Payload, ToolSpec
from baton.context.prompt_cache import iter_segments
from baton.context.tokens import estimate_block_tokens, estimate_payload_tokens
from baton.context.validation import validate_request
from baton.errors import ConfigError
from baton.models.errors import ContextOverflowError, ScriptExhaustedError, ScriptFileError
from baton.models.protocol import CallContext, Model, ModelResponse, TokenCounter, bind_call
from baton.models.scripted import (
    OFFLINE_MODEL_NAME,
    Script,
    ScriptedModel,
    ScriptedResponse,
)

SYSTEM = "You are the Execute agent. Follow the design files exactly. " * 60  # ~1,200 tokens
READ_TOOL: ToolSpec = {
    "name": "Read",
    "description": "Read a file of the workspace.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def ask(text: str = "Build the tools.") -> Payload:
    return {"max_tokens": 1024, "messages": [{"role": "user", "content": text}]}


def cached(messages: list[Any]) -> Payload:
    """A payload whose system prompt and tools form a cache_control-marked prefix."""
    return {
        "max_tokens": 1024,
        "system": [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
        "tools": [READ_TOOL],
        "messages": messages,
    }


async def call(model: ScriptedModel, payload: Payload, **context: Any) -> ModelResponse:
    with bind_call(CallContext(**{"actor": "execute", "turn": 0, **context})):
        return await model.create(payload)


async def test_each_actor_plays_its_script_in_turn_order() -> None:
    """Replies follow CallContext.turn per actor; actors do not consume each other's script."""
    model = ScriptedModel({"actors": {"init": ["i0", "i1"], "execute": ["e0", "e1"]}})
    texts = [
        (await call(model, ask(), actor="init", turn=0)).text,
        (await call(model, ask(), actor="execute", turn=0)).text,
        (await call(model, ask(), actor="execute", turn=1)).text,
        (await call(model, ask(), actor="init", turn=1)).text,
    ]
    assert ["i0", "e0", "e1", "i1"] == texts
    assert (2, 2) == (len(model.calls_for("init")), len(model.calls_for("execute")))


async def test_a_restarted_actor_resumes_at_its_turn() -> None:
    """After a restart a fresh model answers turn 2 with entry 2, not with entry 0."""
    script = {"actors": {"execute": ["zero", "one", "two"]}}
    before = ScriptedModel(script)
    await call(before, ask(), turn=0)
    await call(before, ask(), turn=1)
    after_restart = ScriptedModel(script)
    assert "two" == (await call(after_restart, ask(), turn=2)).text


async def test_without_a_bound_context_replies_come_in_call_order() -> None:
    """Bare calls (no CallContext) use the `*` script in the order they are made."""
    model = ScriptedModel({"actors": {"*": ["first", "second"]}})
    assert ["first", "second"] == [(await model.create(ask())).text for _ in range(2)]


async def test_a_tool_call_reply_fits_back_into_a_valid_payload() -> None:
    """A scripted tool_use has a stable id and stop_reason tool_use, and re-validates."""
    model = ScriptedModel(
        {"actors": {"execute": [{"text": "Reading.", "tool_use": {"name": "Read", "input": {}}}]}}
    )
    reply = await call(model, ask(), turn=0)
    follow_up = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            *ask()["messages"],
            {"role": "assistant", "content": reply.content},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_execute_0000_1"}],
            },
        ],
    }
    assert ("tool_use", "toolu_execute_0000_1") == (reply.stop_reason, reply.tool_uses[0]["id"])
    assert [] == validate_request(follow_up)


async def test_usage_is_the_estimate_when_nothing_is_cached() -> None:
    """Without cache_control, input is the payload estimate and output the reply's estimate."""
    model = ScriptedModel({"actors": {"execute": ["A reply of a few words."]}})
    payload = ask("生成请假申请场景 and write the checker")
    reply = await call(model, payload)
    output = sum(estimate_block_tokens(b) for b in reply.content)
    assert (estimate_payload_tokens(payload), 0, 0, output) == (
        reply.usage.input_tokens,
        reply.usage.cache_creation_input_tokens,
        reply.usage.cache_read_input_tokens,
        reply.usage.output_tokens,
    )
    assert OFFLINE_MODEL_NAME == reply.model


def test_cache_segments_add_up_to_the_payload_estimate() -> None:
    """The cache simulation counts exactly the tokens the estimator counts."""
    payload = cached(
        [
            {"role": "user", "content": [{"type": "text", "text": "read a.md"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 99}],
            },
        ]
    )
    assert estimate_payload_tokens(payload) == sum(s.tokens for s in iter_segments(payload))


async def test_a_marked_prefix_is_written_once_then_read() -> None:
    """First call writes the cached prefix, the identical second call reads all of it back."""
    model = ScriptedModel({"actors": {"execute": ["one", "two"]}})
    payload = cached([{"role": "user", "content": "go"}])
    prefix = estimate_payload_tokens(payload) - estimate_payload_tokens(ask("go"))
    first = (await call(model, payload, turn=0)).usage
    second = (await call(model, payload, turn=1)).usage
    rest = estimate_payload_tokens(ask("go"))
    assert (rest, prefix, 0) == (
        first.input_tokens,
        first.cache_creation_input_tokens,
        first.cache_read_input_tokens,
    )
    assert (rest, 0, prefix) == (
        second.input_tokens,
        second.cache_creation_input_tokens,
        second.cache_read_input_tokens,
    )


async def test_a_moving_breakpoint_reads_the_old_prefix_and_writes_the_new_part() -> None:
    """As the conversation grows, the earlier cached prefix is read and only the rest written."""
    model = ScriptedModel({"actors": {"execute": ["one", "two"]}}, min_cache_tokens=0)
    turn1: list[Any] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "step one", "cache_control": {"type": "ephemeral"}}
            ],
        }
    ]
    turn2: list[Any] = [
        {"role": "user", "content": [{"type": "text", "text": "step one"}]},
        {"role": "assistant", "content": "done one"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "step two", "cache_control": {"type": "ephemeral"}}
            ],
        },
    ]
    first = (await call(model, cached(turn1), turn=0)).usage
    second = (await call(model, cached(turn2), turn=1)).usage
    total2 = estimate_payload_tokens(cached(turn2))
    assert (0, estimate_payload_tokens(cached(turn1))) == (
        first.input_tokens,
        first.cache_creation_input_tokens,
    )
    assert (first.cache_creation_input_tokens, total2 - first.cache_creation_input_tokens, 0) == (
        second.cache_read_input_tokens,
        second.cache_creation_input_tokens,
        second.input_tokens,
    )


async def test_a_prefix_below_the_minimum_is_not_cached() -> None:
    """As with the API, a marked prefix below the model's minimum is neither written nor read."""
    model = ScriptedModel({"actors": {"execute": ["one", "two"]}}, min_cache_tokens=100_000)
    payload = cached([{"role": "user", "content": "go"}])
    usages = [(await call(model, payload, turn=n)).usage for n in range(2)]
    assert [estimate_payload_tokens(payload)] * 2 == [u.input_tokens for u in usages]
    assert [0, 0] == [u.cache_read_input_tokens for u in usages]


async def test_a_cached_prefix_expires_after_its_ttl() -> None:
    """After five idle minutes the prefix is written again instead of read."""
    now = [0.0]
    model = ScriptedModel({"actors": {"execute": ["a", "b", "c"]}}, clock=lambda: now[0])
    payload = cached([{"role": "user", "content": "go"}])
    await call(model, payload, turn=0)
    now[0] = 299.0
    read = (await call(model, payload, turn=1)).usage
    now[0] = 299.0 + 301.0  # the read at 299 s refreshed the entry; 301 s later it is gone
    expired = (await call(model, payload, turn=2)).usage
    assert (0, read.cache_read_input_tokens) == (
        read.cache_creation_input_tokens,
        expired.cache_creation_input_tokens,
    )
    assert 0 == expired.cache_read_input_tokens


async def test_a_compaction_call_gets_a_schema_shaped_summary_from_the_payload() -> None:
    """Without a scripted summary, compaction gets schema-shaped JSON built from the payload."""
    model = ScriptedModel({"actors": {"execute": ["never used"]}})
    payload: Payload = {
        "max_tokens": 4000,
        "messages": [
            {
                "role": "user",
                "content": "Run scenarios/leave/execution_outputs/iteration_3/samples",
            },
            {"role": "assistant", "content": "Checker tools/check_dates.py is too strict."},
            {"role": "user", "content": "请对当前工作进行总结，总结格式使用JSON。"},
        ],
    }
    reply = await call(model, payload, turn=5, purpose="compaction")
    summary = json.loads(reply.text)
    assert [
        "generated_components",
        "evaluation_progress",
        "identified_issues",
        "pending_work",
        "key_paths",
    ] == list(summary)
    assert (
        "scenarios/leave/execution_outputs/iteration_3"
        == summary["key_paths"]["execution_output_dir"]
    )
    assert 3 == summary["evaluation_progress"]["current_iteration"]
    assert reply.text == (await call(model, payload, turn=5, purpose="compaction")).text


async def test_scripted_summaries_come_first_and_init_gets_its_own_shape() -> None:
    """A script's compaction entries are used in order; then Init gets the Init schema."""
    model = ScriptedModel({"actors": {"init": {"compactions": [{"pending_actions": ["x"]}]}}})
    payload: Payload = {
        "max_tokens": 4000,
        "messages": [
            {"role": "user", "content": "design it"},
            {"role": "assistant", "content": "designed"},
            {"role": "user", "content": "summarise"},
        ],
    }
    scripted = await call(model, payload, actor="init", turn=4, purpose="compaction")
    derived = await call(model, payload, actor="init", turn=9, purpose="compaction")
    assert {"pending_actions": ["x"]} == json.loads(scripted.text)
    assert "current_design_summary" in json.loads(derived.text)


async def test_a_task_summary_call_restates_the_latest_request() -> None:
    """purpose=task_summary gets one deterministic sentence from the last user text."""
    model = ScriptedModel()
    reply = await call(
        model, ask("Fix  the\n date checker"), actor="scheduler", purpose="task_summary"
    )
    assert "Task: Fix the date checker" == reply.text


async def test_a_too_short_script_says_so() -> None:
    """Asking for a turn past the script's end raises ScriptExhaustedError naming the actor."""
    model = ScriptedModel({"actors": {"execute": ["only one"]}})
    with pytest.raises(ScriptExhaustedError, match="'execute' has 1 replies but turn 1"):
        await call(model, ask(), turn=1)


async def test_a_policy_answers_what_the_script_does_not() -> None:
    """A policy (sync or async) answers turns past the script, seeing payload and context."""

    async def policy(payload: Payload, context: CallContext) -> ScriptedResponse | str:
        return f"turn {context.turn} of {context.actor}"

    model = ScriptedModel({"actors": {"execute": ["scripted"]}}, policy=policy)
    texts = [(await call(model, ask(), turn=n)).text for n in range(2)]
    assert ["scripted", "turn 1 of execute"] == texts


async def test_without_a_script_the_default_policy_ends_the_turn() -> None:
    """The embedded offline default ends each turn and says how to use Claude instead."""
    reply = await call(ScriptedModel(), ask(), actor="init")
    assert ("end_turn", []) == (reply.stop_reason, reply.tool_uses)
    assert "ANTHROPIC_API_KEY" in reply.text


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_scripts_load_from_toml_and_json(tmp_path: Path, suffix: str) -> None:
    """The same script reads identically from TOML and JSON, shorthands included."""
    toml = """
[[actors.execute]]
text = "Reading."
tool_use = { name = "Read", input = { path = "a.md" } }

[[actors.execute]]
text = "Done."

[actors.init]
turns = ["ok"]
task_summaries = ["Task: design"]
"""
    data = {
        "actors": {
            "execute": [
                {"text": "Reading.", "tool_use": {"name": "Read", "input": {"path": "a.md"}}},
                {"text": "Done."},
            ],
            "init": {"turns": ["ok"], "task_summaries": ["Task: design"]},
        }
    }
    path = tmp_path / f"script{suffix}"
    path.write_text(toml if suffix == ".toml" else json.dumps(data), encoding="utf-8")
    assert Script.model_validate(data) == Script.from_file(path)


def test_a_broken_script_file_is_a_config_error(tmp_path: Path) -> None:
    """A script that does not validate names its file in a ConfigError."""
    path = tmp_path / "bad.json"
    path.write_text('{"actors": {"execute": [{"tool_use": {"name": "no spaces allowed"}}]}}')
    with pytest.raises(ConfigError, match=r"bad\.json"):
        Script.from_file(path)


def test_a_script_that_does_not_validate_names_the_actor_and_turn(tmp_path: Path) -> None:
    """Each problem (three at most) is located by actor and turn, in one line."""
    path = tmp_path / "script.json"
    script = {"actors": {"init": ["ok", {"text": ""}], "execute": {"turns": [{"tool_use": 5}]}}}
    path.write_text(json.dumps(script), encoding="utf-8")
    with pytest.raises(ScriptFileError) as raised:
        Script.from_file(path)
    message = str(raised.value)
    assert 1 == len(message.splitlines())
    assert message.startswith(
        f"cannot load model script {path}: actor 'init' turn 1: content.0.text: String should "
        "have at least 1 character (got \"\"); actor 'execute' turn 0: content.0: "
    )


@pytest.mark.parametrize(
    ("suffix", "text", "where"),
    [
        # Measured before parsing: the parser would recurse 100,000 times.
        (".json", '{"actors": {\n"init": [\n' + "[" * 100_000 + "]" * 100_000 + "]}}", "line 3"),
        # Parsed (the TOML parser copes with 150 levels), then measured.
        (
            ".toml",
            "[[actors.init]]\ntext = 'x'\n[[actors.init]]\ntool_use = { name = 'R', "
            "input = { a = " + "[" * 150 + "]" * 150 + " } }\n",
            "actor 'init' turn 1: tool_use",
        ),
        # Past what the TOML parser's stack holds.
        (".toml", "[actors]\ninit = " + "[" * 2000 + "]" * 2000 + "\n", "arrays"),
    ],
)
def test_a_script_nested_too_deep_is_refused_naming_where(
    tmp_path: Path, suffix: str, text: str, where: str
) -> None:
    """Arrays nested past the bound are one ScriptFileError naming the file and the line
    (JSON) or the actor and turn (TOML), never a RecursionError."""
    path = tmp_path / f"script{suffix}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScriptFileError) as raised:
        Script.from_file(path)
    assert str(raised.value).startswith(f"cannot load model script {path}: {where}")
    assert "nest more than 100 levels deep" in str(raised.value)


def test_a_directory_for_a_script_is_named_as_one(tmp_path: Path) -> None:
    """A directory at the script's path is refused in words that say so."""
    (tmp_path / "script.json").mkdir()
    with pytest.raises(ScriptFileError) as raised:
        Script.from_file(tmp_path / "script.json")
    assert f"{tmp_path / 'script.json'}: is a directory, not a script file" in str(raised.value)


async def test_invalid_payloads_and_overlong_prompts_fail_like_the_api() -> None:
    """A payload breaking the API's rules, or over the window, fails as the API would."""
    model = ScriptedModel(context_window=10)
    with pytest.raises(InvalidRequestError, match="first message must use the user role"):
        await model.create({"max_tokens": 5, "messages": [{"role": "assistant", "content": "x"}]})
    with pytest.raises(ContextOverflowError, match="> 10 maximum"):
        await model.create(ask("word " * 50))


async def test_every_log_line_names_the_offline_model() -> None:
    """Log lines say `offline-scripted`, so nobody mistakes them for Claude's."""
    model = ScriptedModel({"actors": {"execute": ["a", "b"]}})
    with capture_logs() as logs:
        for turn in range(2):
            await call(model, ask(), turn=turn)
    assert [OFFLINE_MODEL_NAME] * 2 == [line["model"] for line in logs]


async def test_it_is_a_model_that_counts_tokens() -> None:
    """ScriptedModel satisfies Model and TokenCounter; its count is the estimate."""
    model = ScriptedModel(context_window=50_000, max_output_tokens=8_000)
    limits = await model.limits()
    assert (True, True) == (isinstance(model, Model), isinstance(model, TokenCounter))
    assert estimate_payload_tokens(ask()) == await model.count_tokens(ask())
    assert (50_000, 8_000, "config") == (
        limits.context_window,
        limits.max_output_tokens,
        limits.source,
    )
