"""Journals: durable append, ordered read, torn last line tolerated, damage reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from baton import Runtime
from baton.agents.agent import AgentActor
from baton.agents.agent_setup import AgentSetup
from baton.agents.errors import JournalCorruptError
from baton.agents.journal import FileJournalStore, MemoryJournalStore, decode_line, encode_line
from baton.agents.messages import Prompt
from baton.errors import UsageError
from baton.models.scripted import ScriptedModel
from tests.agents.test_agent import config, scripted


async def test_records_read_back_in_append_order(tmp_path: Path) -> None:
    """What was appended is read back, in order, with CJK text intact."""
    store = FileJournalStore(tmp_path)
    records = [{"kind": "round", "text": "生成请假申请场景"}, {"kind": "step", "turn": 1}]
    for record in records:
        await store.append("init", "c1", record)
    assert records == await store.read("init", "c1")
    assert (tmp_path / ".baton/journal/init/c1.jsonl").is_file()


async def test_a_torn_last_line_is_dropped_and_cut_off(tmp_path: Path) -> None:
    """A half-written final line is ignored, removed from the file, and appends resume cleanly."""
    store = FileJournalStore(tmp_path)
    await store.append("init", "c1", {"n": 1})
    await store.append("init", "c1", {"n": 2})
    path = store.path("init", "c1")
    whole = path.read_bytes()
    path.write_bytes(whole + encode_line({"n": 3})[:-7])  # the crash hit mid-line
    assert [{"n": 1}, {"n": 2}] == await store.read("init", "c1")
    assert whole == path.read_bytes()
    await store.append("init", "c1", {"n": 3})
    assert [{"n": 1}, {"n": 2}, {"n": 3}] == await store.read("init", "c1")


async def test_damage_before_the_last_line_is_an_error(tmp_path: Path) -> None:
    """A corrupted line that is not the last raises JournalCorruptError naming the line."""
    store = FileJournalStore(tmp_path)
    for n in range(3):
        await store.append("init", "c1", {"n": n})
    path = store.path("init", "c1")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"n":1', b'"n":7')  # checksum no longer matches
    path.write_bytes(b"".join(lines))
    with pytest.raises(JournalCorruptError, match="line 2"):
        await store.read("init", "c1")


def test_a_line_with_a_wrong_checksum_does_not_decode() -> None:
    """decode_line refuses a line whose body changed after its checksum was computed."""
    line = encode_line({"a": 1})
    assert {"a": 1} == decode_line(line)
    assert decode_line(line.replace(b"1}", b"2}")) is None
    assert decode_line(line[:-1]) is None  # no newline: torn


async def test_conversations_are_listed_per_actor(tmp_path: Path) -> None:
    """`conversations` lists the ids an actor has journals for, and none for others."""
    store = FileJournalStore(tmp_path)
    await store.append("init", "b", {})
    await store.append("init", "a", {})
    await store.append("execute", "z", {})
    assert ["a", "b"] == await store.conversations("init")
    assert [] == await store.conversations("scheduler")


async def test_unsafe_names_are_refused(tmp_path: Path) -> None:
    """Actor or conversation names that could escape the journal directory are refused."""
    store = FileJournalStore(tmp_path)
    with pytest.raises(UsageError, match="invalid conversation"):
        await store.append("init", "../../etc", {})
    with pytest.raises(UsageError, match="invalid actor"):
        await store.read("a/b", "c")


async def test_memory_store_behaves_like_the_file_store(tmp_path: Path) -> None:
    """The in-memory store returns the same JSON-normalised records as the file store."""
    record = {"t": (1, 2), "s": "x"}
    file_store, memory_store = FileJournalStore(tmp_path), MemoryJournalStore()
    for store in (file_store, memory_store):
        await store.append("a", "c", record)
    assert await file_store.read("a", "c") == await memory_store.read("a", "c")
    assert ["c"] == await memory_store.conversations("a")


async def test_local_stores_are_sole_owners(tmp_path: Path) -> None:
    """File and memory stores are not shared: `hold` is a no-op (nesting included), an append
    needs no hold, and `length` counts the records, as with the Redis store."""
    for store in (FileJournalStore(tmp_path), MemoryJournalStore()):
        assert not store.shared
        assert 0 == await store.length("a", "c")
        async with store.hold("a", "c"), store.hold("a", "c"):
            await store.append("a", "c", {"n": 1})
        await store.append("a", "c", {"n": 2})
        assert 2 == await store.length("a", "c")


def setup_of(workspace: Path, model: ScriptedModel, token_log: Any) -> AgentSetup:
    """A plain agent journaling to the workspace's files."""
    return AgentSetup(
        role="execute",
        config=config(),
        model=model,
        system_prompt="You are a test agent.",
        journal=FileJournalStore(workspace),
        token_log=token_log,
    )


async def test_a_removed_line_names_the_journal_actor_conversation_and_line(
    tmp_path: Path,
) -> None:
    """A journal with a step line removed fails the agent's next round with one message that
    names the file, the actor, the conversation and the line, and says to move it aside."""
    model = scripted(["First answer.", "Second answer."], actor="agent")
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("agent", AgentActor, setup_of(tmp_path, model, rt.token_log))
        for text in ("one", "two"):
            await rt.ask("agent", Prompt(text=text))
    path = FileJournalStore(tmp_path).path("agent", "main")
    lines = path.read_bytes().splitlines(keepends=True)
    kinds = [str((decode_line(line) or {}).get("type")) for line in lines]
    damaged = lines[: kinds.index("step")] + lines[kinds.index("step") + 1 :]
    path.write_bytes(b"".join(damaged))
    second_step = kinds.index("step", kinds.index("step") + 1)  # now one line earlier
    async with Runtime.open(tmp_path) as rt:
        with pytest.raises(JournalCorruptError) as failed:
            # The agent reads its conversations as it starts: the damage stops it there.
            await rt.spawn("agent", AgentActor, setup_of(tmp_path, model, rt.token_log))
    error = failed.value
    assert (str(path), "agent", "main", second_step) == (
        error.path,
        error.actor,
        error.conversation,
        error.line,
    )
    assert str(error).startswith(
        f"journal {path} (actor 'agent', conversation 'main') is damaged at line "
        f"{second_step}: step 1 out of order: expected 0 — move it aside "
        f"(e.g. `mv {path} {path}.damaged`)"
    )


async def test_a_damaged_line_names_the_actor_the_conversation_and_what_is_wrong(
    tmp_path: Path,
) -> None:
    """A line whose checksum no longer matches, or that is no JSON object, is reported with
    the actor, the conversation, what is wrong with the line and the fix."""
    store = FileJournalStore(tmp_path)
    for n in range(3):
        await store.append("init", "c1", {"n": n})
    path = store.path("init", "c1")
    lines = path.read_bytes().splitlines(keepends=True)
    changed = lines[1].replace(b'"n":1', b'"n":7')
    path.write_bytes(b"".join([lines[0], changed, lines[2]]))
    with pytest.raises(JournalCorruptError) as checksum:
        await store.read("init", "c1")
    path.write_bytes(b"".join([lines[0], encode_line({"n": 1})[:9] + b"[1]\n", lines[2]]))
    with pytest.raises(JournalCorruptError) as prefix:
        await store.read("init", "c1")
    assert str(checksum.value).startswith(
        f"journal {path} (actor 'init', conversation 'c1') is damaged at line 2: the line's "
        "CRC-32 does not match its content"
    )
    assert "it is not the last line, so not a write a crash tore" in str(checksum.value)
    assert f"move it aside (e.g. `mv {path} {path}.damaged`)" in str(checksum.value)
    assert "damaged at line 2: the line's CRC-32 does not match" in str(prefix.value)


async def test_a_torn_last_line_is_logged_with_the_actor_and_conversation(
    tmp_path: Path,
) -> None:
    """The warning for a dropped torn last line names the actor and the conversation too."""
    store = FileJournalStore(tmp_path)
    await store.append("init", "c1", {"n": 1})
    path = store.path("init", "c1")
    path.write_bytes(path.read_bytes() + encode_line({"n": 2})[:-3])
    with capture_logs() as logs:
        await store.read("init", "c1")
    (warning,) = [e for e in logs if e["event"] == "journal.torn_line_dropped"]
    assert ("init", "c1", 2, str(path)) == (
        warning["actor"],
        warning["conversation"],
        warning["line"],
        warning["path"],
    )
