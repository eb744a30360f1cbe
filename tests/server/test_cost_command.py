"""`baton cost [--what-if]`: per agent, the bill its logged calls add up to and, with
`--what-if`, each policy's bill of the same run beside it (text or JSON); a damaged token-log
line is named by file and line, a workspace without a journal or an unknown scenario is
refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis

from baton.agents.journal import encode_line
from baton.context.conversation import Conversation
from baton.context.records import dump_record
from baton.runtime.token_relay import LINE_FIELD, stream_key
from baton.server._cost_command import in_scope
from baton.server.cli import main


def run_records() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Execute's journal of one short round in conversation `demo`, and its token-log lines."""
    conversation = Conversation(id="demo")
    records: list[dict[str, Any]] = [dump_record(conversation.start_round("Run the samples."))]
    lines = []
    for turn in range(3):
        content: list[dict[str, Any]] = [{"type": "text", "text": f"Step {turn}."}]
        results = []
        if turn < 2:
            content.append({"type": "tool_use", "id": f"t{turn}", "name": "Read", "input": {}})
            results.append(
                {"type": "tool_result", "tool_use_id": f"t{turn}", "content": "x" * 9000}
            )
        records.append(dump_record(conversation.append_step(content, results, None)))
        lines.append(
            {
                "ts": f"2026-11-26T18:45:0{turn}.000000Z",
                "event": "model.call",
                "actor": "execute",
                "scenario": "demo",
                "conversation": "demo",
                "process": "host:1",
                "model": "offline-scripted",
                "input_tokens": 4000,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 10,
                "turn": turn,
                "purpose": "turn",
            }
        )
    return records, lines


def workspace(tmp_path: Path, *, damaged: bool = False) -> Path:
    """`run_records` as a workspace's journal file and token log."""
    records, lines = run_records()
    journal = tmp_path / ".baton" / "journal" / "execute" / "demo.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_bytes(b"".join(encode_line(record) for record in records))
    log = tmp_path / ".baton" / "logs" / "tokens.jsonl"
    log.parent.mkdir(parents=True)
    text = [json.dumps(line) for line in lines]
    if damaged:
        text.insert(1, '{"ts": "2026-11-26T18:45:0')
    log.write_text("\n".join(text) + "\n")
    return tmp_path


def test_the_logged_bill_per_agent_priced_at_its_configured_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --what-if: one line per agent, its calls and cost at the model it is
    configured with, since the offline model it called costs nothing."""
    ws = workspace(tmp_path)
    assert 0 == main(["cost", "--workspace", str(ws)])
    out = capsys.readouterr().out
    assert "offline-scripted · priced at claude-sonnet-5-5" in out
    assert 0 == main(["cost", "--workspace", str(ws), "--json"])
    agents = json.loads(capsys.readouterr().out)["agents"]
    assert [("execute", 3, 12_000)] == [
        (a["actor"], a["logged"]["calls"], a["logged"]["input_tokens"]) for a in agents
    ]


def test_what_if_shows_each_policy_under_both_cache_lifetimes_beside_the_logged_bill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run's policy is marked and followed by the logged bill and the difference; every
    policy has a 5-minute and a 1-hour row; --json holds the same."""
    ws = workspace(tmp_path)
    assert 0 == main(["cost", "--what-if", "--workspace", str(ws)])
    out = capsys.readouterr().out
    assert "← the run's policy" in out
    assert "logged (the token log)" in out
    assert "difference " in out
    assert 0 == main(["cost", "--what-if", "--workspace", str(ws), "--json"])
    [execute] = json.loads(capsys.readouterr().out)["agents"]
    rows = {(row["policy"], row["cache"]) for row in execute["rows"]}
    assert {("keep-all", "5m"), ("keep-all", "1h"), ("per-turn-strip", "1h")} <= rows
    assert 1 == sum(row["used"] for row in execute["rows"])
    assert 3 == execute["logged"]["calls"]


def test_a_damaged_token_log_line_is_named_by_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line cut short in the middle of the log stops the command (1) naming it: the bill
    would silently miss a call."""
    ws = workspace(tmp_path, damaged=True)
    assert 1 == main(["cost", "--what-if", "--workspace", str(ws)])
    err = capsys.readouterr().err
    assert f"{ws / '.baton' / 'logs' / 'tokens.jsonl'}:2 is not a JSON object" in err
    assert 1 == len(err.splitlines())


def test_no_journal_or_an_unknown_scenario_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No journal: nothing to replay (1), say to run first; an unknown scenario is a usage
    error (2) naming the known ones."""
    assert 1 == main(["cost", "--what-if", "--workspace", str(tmp_path)])
    assert "nothing to replay — run a scenario there with `baton run` first" in (
        capsys.readouterr().err
    )
    ws = workspace(tmp_path)
    assert 2 == main(["cost", "--what-if", "--workspace", str(ws), "--scenario", "trip"])
    assert "unknown scenario 'trip' — known: demo" in capsys.readouterr().err


def test_a_scenario_means_its_every_run_and_name_at_n_one_run() -> None:
    """`NAME` takes every run of it; `NAME@2` its second only, `NAME@1` its first."""
    conversations = ["leave", "leave@2", "trip"]
    assert ["leave", "leave@2"] == [c for c in conversations if in_scope(c, "leave")]
    assert ["leave@2"] == [c for c in conversations if in_scope(c, "leave@2")]
    assert ["leave"] == [c for c in conversations if in_scope(c, "leave@1")]
    assert conversations == [c for c in conversations if in_scope(c, None)]


def test_with_a_redis_mailbox_the_deployments_journals_and_stream_are_read(
    tmp_path: Path, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--mailbox`: the same run kept in Redis (journals, token-log stream) bills as it does
    from the workspace's files; with nothing there, the error names Redis."""
    assert 1 == main(["cost", "--workspace", str(tmp_path), "--mailbox", redis_url])
    assert "no journal in Redis at" in capsys.readouterr().err
    records, lines = run_records()
    client = redis.Redis.from_url(redis_url)
    try:
        client.rpush("baton:journal:{execute}:demo", *(json.dumps(r) for r in records))
        client.sadd("baton:journals:{execute}", "demo")
        for line in lines:
            client.xadd(stream_key("baton"), {LINE_FIELD: json.dumps(line)})
    finally:
        client.close()
    assert 0 == main(
        ["cost", "--what-if", "--json", "--workspace", str(tmp_path), "--mailbox", redis_url]
    )
    from_redis = json.loads(capsys.readouterr().out)
    files = workspace(tmp_path / "files")
    assert 0 == main(["cost", "--what-if", "--json", "--workspace", str(files)])
    assert json.loads(capsys.readouterr().out) == from_redis
