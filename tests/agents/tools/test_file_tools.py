"""Read, Write and List: paging, head+tail, total size, atomic writes, capped listings."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from baton.agents.tools import (
    List,
    ListInput,
    Read,
    ReadInput,
    Sandbox,
    Write,
    WriteInput,
    scenario_scope,
)
from baton.agents.tools.protocol import ToolOutcome
from baton.pipeline.artifacts import check_artifact


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    lines = "".join(f"line {n}\n" for n in range(1, 101))
    (tmp_path / "hundred.txt").write_text(lines, encoding="utf-8")
    return Sandbox(tmp_path)


async def read(sandbox: Sandbox, **args: Any) -> ToolOutcome:
    return await Read(sandbox).run(ReadInput.model_validate(args))


async def test_read_returns_a_numbered_range_and_the_total_size(sandbox: Sandbox) -> None:
    """offset/limit select lines (1-based), the header gives the total, and says how to go on."""
    outcome = await read(sandbox, path="hundred.txt", offset=10, limit=3)
    assert not outcome.is_error
    assert [
        "hundred.txt: 100 lines, 792 chars; lines 10-12 of 100; continue with offset=13",
        "    10\tline 10",
        "    11\tline 11",
        "    12\tline 12",
    ] == outcome.content.splitlines()


async def test_read_head_tail_shows_both_ends_and_what_was_left_out(sandbox: Sandbox) -> None:
    """head_tail returns the first and last `limit` lines and names the omitted range."""
    outcome = await read(sandbox, path="hundred.txt", mode="head_tail", limit=2)
    assert [
        "hundred.txt: 100 lines, 792 chars; head_tail: lines 1-2 and 99-100",
        "     1\tline 1",
        "     2\tline 2",
        "[... lines 3-98 omitted (761 chars); read them with offset=3 and a limit ...]",
        "    99\tline 99",
        "   100\tline 100",
    ] == outcome.content.splitlines()


async def test_read_head_tail_of_a_short_file_shows_it_all(sandbox: Sandbox) -> None:
    """A file no longer than both ends together is shown whole, with no omission marker."""
    outcome = await read(sandbox, path="hundred.txt", mode="head_tail", limit=50)
    assert 101 == len(outcome.content.splitlines())
    assert "omitted" not in outcome.content


async def test_read_reports_the_total_even_for_the_default_page(tmp_path: Path) -> None:
    """Reading a 1000-line file without limit returns the default page and states 1000 lines."""
    (tmp_path / "big.txt").write_text("x\n" * 1000, encoding="utf-8")
    outcome = await read(Sandbox(tmp_path), path="big.txt")
    first = outcome.content.splitlines()[0]
    assert "big.txt: 1000 lines, 2000 chars; lines 1-400 of 1000; continue with offset=401" == first


async def test_read_cuts_a_very_long_line_to_its_ends(tmp_path: Path) -> None:
    """A one-line 10K-char file is shown as head + marker + tail of that line."""
    (tmp_path / "min.json").write_text("a" * 5000 + "b" * 5000, encoding="utf-8")
    outcome = await read(Sandbox(tmp_path), path="min.json")
    body = outcome.content.splitlines()[1]
    assert "     1\t" + "a" * 1000 + "[... 8000 chars omitted ...]" + "b" * 1000 == body


async def test_read_errors_say_what_to_do(sandbox: Sandbox, tmp_path: Path) -> None:
    """Past-the-end offsets, missing files and directories come back as is_error outcomes."""
    past = await read(sandbox, path="hundred.txt", offset=101)
    missing = await read(sandbox, path="nope.txt")
    (tmp_path / "d").mkdir()
    directory = await read(sandbox, path="d")
    assert (True, True, True) == (past.is_error, missing.is_error, directory.is_error)
    assert "offset 101 is past the last line" in past.content
    assert "List its directory" in missing.content
    assert "use List" in directory.content


async def test_read_of_an_empty_file_says_so(tmp_path: Path) -> None:
    """An empty file reads as zero lines, not as an error."""
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    outcome = await read(Sandbox(tmp_path), path="empty.txt")
    assert ToolOutcome("empty.txt: 0 lines, 0 chars (empty file)") == outcome


async def test_write_creates_parents_and_leaves_no_temp_file(tmp_path: Path) -> None:
    """Write makes missing directories, writes the exact text, and replaces on a second write."""
    write = Write(Sandbox(tmp_path))
    path = "scenarios/leave/BusinessRules.md"
    with scenario_scope("leave"):
        first = await write.run(WriteInput(path=path, content="# 规则\n1. 先创建申请\n"))
        await write.run(WriteInput(path=path, content="# 规则\n2. 再扣减余额\n"))
    assert "wrote scenarios/leave/BusinessRules.md: 2 lines, 14 chars" == first.content
    assert "# 规则\n2. 再扣减余额\n" == (tmp_path / path).read_text(encoding="utf-8")
    assert ["BusinessRules.md"] == os.listdir(tmp_path / "scenarios/leave")


async def test_write_refuses_an_invalid_artifact_and_writes_nothing(tmp_path: Path) -> None:
    """A layer1_problems_report.json missing fields is refused, naming them, and not written."""
    path = "scenarios/leave/execution_outputs/iteration_1/layer1_problems_report.json"
    with scenario_scope("leave"):
        outcome = await Write(Sandbox(tmp_path), check=check_artifact).run(
            WriteInput(path=path, content=json.dumps({"report_version": "1.0", "iteration": 1}))
        )
    assert outcome.is_error
    assert outcome.content.startswith(f"nothing written: artifact {path} is not valid")
    assert "generated_at: Field required" in outcome.content
    assert not (tmp_path / path).exists()


async def test_write_warns_about_a_json_file_that_is_not_json(tmp_path: Path) -> None:
    """A .json file outside the artifact layout is written, with a warning if it does not parse."""
    path = "scenarios/leave/spec.json"
    with scenario_scope("leave"):
        outcome = await Write(Sandbox(tmp_path), check=check_artifact).run(
            WriteInput(path=path, content="{oops")
        )
    assert not outcome.is_error
    assert "warning: this is not valid JSON" in outcome.content
    assert "{oops" == (tmp_path / path).read_text(encoding="utf-8")


async def test_list_shows_kinds_and_sizes_and_skips_the_runtime_directory(tmp_path: Path) -> None:
    """Directories end in '/', files show bytes, links end in '@', and .baton/ is not listed."""
    (tmp_path / ".baton").mkdir()
    (tmp_path / "scenarios/leave").mkdir(parents=True)
    (tmp_path / "scenarios/leave/a.md").write_text("abc", encoding="utf-8")
    os.symlink(tmp_path / "scenarios", tmp_path / "link")
    outcome = await List(Sandbox(tmp_path)).run(ListInput(recursive=True))
    assert [
        "./: 4 entries (recursive)",
        "link@",
        "scenarios/",
        "scenarios/leave/",
        "scenarios/leave/a.md  (3 bytes)",
    ] == outcome.content.splitlines()


async def test_list_leaves_out_what_a_write_killed_mid_way_left(tmp_path: Path) -> None:
    """The temp file of an atomic write whose process was killed before the rename is not
    listed (a killed and resumed run lists what an uninterrupted one does); another dotfile
    is."""
    (tmp_path / "a.json").write_text("{}", encoding="utf-8")
    (tmp_path / ".a.json.0415eb8a5a2f.tmp").write_text("{", encoding="utf-8")
    (tmp_path / ".notes.tmp").write_text("x", encoding="utf-8")
    outcome = await List(Sandbox(tmp_path)).run(ListInput())
    assert [
        "./: 2 entries",
        ".notes.tmp  (1 bytes)",
        "a.json  (2 bytes)",
    ] == outcome.content.splitlines()


async def test_list_stops_at_its_cap_and_says_so(tmp_path: Path) -> None:
    """With more entries than max_entries, the listing stops there and tells how to see more."""
    for n in range(5):
        (tmp_path / f"f{n}.txt").write_text("", encoding="utf-8")
    outcome = await List(Sandbox(tmp_path)).run(ListInput(max_entries=3))
    lines = outcome.content.splitlines()
    assert ["f0.txt  (0 bytes)", "f1.txt  (0 bytes)", "f2.txt  (0 bytes)"] == lines[1:]
    assert "stopped at max_entries=3" in lines[0]


async def test_list_of_a_file_is_an_error(sandbox: Sandbox) -> None:
    """Listing a file points the model at Read."""
    outcome = await List(sandbox).run(ListInput(path="hundred.txt"))
    assert ToolOutcome("hundred.txt is a file; use Read to see it", is_error=True) == outcome
