"""An agent on Opus 5.5 with thinking, through the real SDK and the current API's stand-in."""

from __future__ import annotations

import json
from pathlib import Path

from structlog.testing import capture_logs

from baton import Runtime
from baton.agents.agent_config import AgentConfig
from baton.agents.journal import FileJournalStore
from baton.agents.messages import Prompt
from baton.pipeline.roles import InitActor, agent_setup
from baton.runtime.token_log import TOKEN_LOG
from baton.testing import DEFAULT_MODELS, MessagesAPIStandIn, capture_token_log
from tests.tool_loop import FINAL_ANSWER, ToolLoop, continuations

PARTS = [f"docs/part_{n}.md" for n in range(4)]


def write_parts(workspace: Path) -> None:
    for n, path in enumerate(PARTS):
        file = workspace / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("\n".join(f"part {n} line {i}: {'leave rule ' * 8}" for i in range(80)))


async def test_a_twenty_step_thinking_loop_compacts_twice_and_no_request_is_refused(
    tmp_path: Path,
) -> None:
    """22 Read steps and an answer on Opus 5.5 (thinking always on, some blocks redacted, the
    thinking text shown): the context is compacted at least twice inside the loop, every
    continuation sends the last reply back with its thinking first, the stand-in accepts every
    request, and no thinking text reaches a log."""
    write_parts(tmp_path)
    loop = ToolLoop(steps=22, paths=PARTS)
    models = dict(DEFAULT_MODELS)
    models["claude-opus-5-5"] = models["claude-opus-5-5"].model_copy(
        update={"thinking_display": "summarized"}  # thinking text to look for in the logs
    )
    config = AgentConfig(
        model="claude-opus-5-5",
        context_window=1_000_000,
        compact_threshold=20_000,
        keep_recent_steps=3,
        thinking="adaptive",
        load_budget_tokens=1_000_000,
    )
    async with (
        MessagesAPIStandIn(policy=loop, models=models, redacted_thinking_every=3) as api,
        Runtime.open(tmp_path) as rt,
        api.model(config.model) as model,
    ):
        setup = agent_setup(
            "init",
            config,
            workspace=tmp_path,
            model=model,
            journal=FileJournalStore(tmp_path),
            token_log=rt.token_log,
        )
        await rt.spawn("init", InitActor, setup)
        with capture_logs() as logs, capture_token_log() as lines:
            reply = await rt.ask("init", Prompt(text="Read the four parts, in turn."), timeout=60)
        requests = api.requests_to("messages")
    assert FINAL_ANSWER == reply
    assert 23 == loop.turns
    assert {200} == {r.status for r in requests}
    compacted = [line for line in lines if line["event"] == "context.compacted"]
    assert 2 <= len(compacted)
    assert {"llm"} == {line["mode"] for line in compacted}
    sent_back = continuations(requests)
    assert 15 <= len(sent_back)  # the loop went on past each compaction
    assert all(content[0]["type"] == "thinking" for content in sent_back)
    assert any(b["type"] == "redacted_thinking" for content in sent_back for b in content)
    calls = [line for line in lines if line["event"] == "model.call"]
    assert {"adaptive"} == {line["thinking"] for line in calls}
    assert "Considering:" not in (tmp_path / TOKEN_LOG).read_text()
    assert "Considering:" not in repr(logs)
    issued = [
        block["thinking"]
        for r in requests
        for message in r.body["messages"]
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "thinking"
    ]
    assert any(text.startswith("Considering:") for text in issued)  # there was text to leak
    # The summaries were asked for in the background (the default `precompact_at`), in the
    # middle of the loop: each such request sends the last reply back thinking first, as a
    # continuation must, and the stand-in took every one.
    records = await FileJournalStore(tmp_path).read("init", "main")
    asked = [r["through_seq"] for r in records if r["type"] == "precompaction"]
    assert 2 <= len(asked)
    summary_requests = [
        r
        for r in requests
        if "请对当前工作进行总结" in json.dumps(r.body["messages"][-1], ensure_ascii=False)
    ]
    assert len(asked) <= len(summary_requests)
    assert all(r.body["messages"][-2]["content"][0]["type"] == "thinking" for r in summary_requests)
