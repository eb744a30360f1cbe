"""leave_application end to end, in process: offline, on its failure path, and over HTTP."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from baton import Runtime
from baton.context.validation import validate_request
from baton.pipeline.artifacts import (
    ArtifactStore,
    AttributionAnalysis,
    EvaluationResult,
    ExecutionTrace,
    Sample,
)
from baton.pipeline.host import open_pipeline
from baton.pipeline.messages import ScenarioQuery, StartScenario
from baton.pipeline.offline_model import OfflineModel
from baton.pipeline.scenario_state import ScenarioState
from baton.testing import MessagesAPIStandIn, read_token_log
from tests.tool_loop import continuations

ROOT = Path(__file__).resolve().parents[2]
NAME = "leave_application"
SOURCE = ROOT / "scenarios" / NAME


def workspace(tmp_path: Path, *, policy: str | None = None) -> Path:
    """A workspace holding the scenario's inputs only (what the repository ships)."""
    folder = tmp_path / "scenarios" / NAME
    folder.mkdir(parents=True)
    shutil.copy(SOURCE / "offline_script.json", folder)
    toml = (SOURCE / "scenario.toml").read_text(encoding="utf-8")
    if policy is not None:
        key = policy.split("=")[0].strip()
        kept = [line for line in toml.splitlines() if not line.startswith(f"{key} ")]
        toml = "\n".join(kept).replace("[policy]", f"[policy]\n{policy}")
    (folder / "scenario.toml").write_text(toml, encoding="utf-8")
    return tmp_path


async def run_to_end(ws: Path, environ: dict[str, str]) -> tuple[ScenarioState, list[Any]]:
    """Submit (auto-approved) and wait for the Scheduler to report an end state."""
    async with Runtime.open(ws) as rt, open_pipeline(rt, environ=environ) as pipeline:
        await rt.ask("scheduler", StartScenario(scenario=NAME, auto_approve=True))
        async with rt.token_log.follow() as records:
            while True:
                state = await rt.ask("scheduler", ScenarioQuery(scenario=NAME))
                assert isinstance(state, ScenarioState)
                if state.phase not in ("completed", "failed"):
                    await records.receive()  # progress is made one logged event at a time
                elif all(not s.busy and s.mailbox_depth == 0 for s in rt.status()):
                    break  # ended, and the agents have finished their last steps
                else:
                    await anyio.wait_all_tasks_blocked()
        calls = list(pipeline.offline.calls) if pipeline.offline is not None else []
    return state, calls


async def check_artifacts(ws: Path) -> None:
    store = ArtifactStore(ws)
    assert [1, 2] == await store.iterations(NAME)
    for iteration in (1, 2):
        layout = store.iteration(NAME, iteration)
        root = ws / layout.directory
        ids = sorted(p.stem for p in (root / "samples").glob("*.json"))
        assert 27 == len(ids)
        summary = await store.read_failure_summary(layout.directory / "failure_summary.json")
        await store.read_report(layout.directory / "layer1_problems_report.json")
        for sid in ids:
            await store.read(layout.directory / "samples" / f"{sid}.json", Sample)
            await store.read(
                layout.directory / "execution_traces" / f"{sid}_trace.json", ExecutionTrace
            )
            await store.read(
                layout.directory / "evaluation_results" / f"{sid}_eval.json", EvaluationResult
            )
        failed = [sid for ids_ in summary.failures_by_cause.values() for sid in ids_]
        for sid in failed:
            await store.read(
                layout.directory / "attribution_analysis" / f"{sid}_attribution.json",
                AttributionAnalysis,
            )
        assert (summary.success_rate >= 0.85) == (iteration == 2)
    design = ws / "scenarios" / NAME
    for name in ("unified_scenario_design.yaml", "BusinessRules.md", "format_specifications.json"):
        assert (design / name).stat().st_size > 500


async def test_leave_application_completes_offline(tmp_path: Path) -> None:
    """Offline, the scenario runs Init → Execute → Init → Execute to `completed`: every artifact
    validates, both directions hand off, both agents compact, every request is valid."""
    ws = workspace(tmp_path)
    state, calls = await run_to_end(ws, environ={})
    assert ("completed", 2) == (state.phase, state.iteration)
    await check_artifacts(ws)
    lines = read_token_log(ws)
    sent = {(e["from"], e["handoff_type"]) for e in lines if e["event"] == "handoff.sent"}
    assert {
        ("init", "init_to_execute"),
        ("execute", "execute_to_init"),
        ("execute", "scenario_complete"),
    } <= sent
    compacted = {e["actor"] for e in lines if e["event"] == "context.compacted"}
    assert {"init", "execute"} <= compacted
    assert any(e["event"] == "context.tool_result_truncated" for e in lines)
    assert {"offline-scripted"} == {e["model"] for e in lines if e["event"] == "model.call"}
    assert len(calls) == sum(1 for e in lines if e["event"] == "model.call")
    for call in calls:
        assert [] == validate_request(call.payload, require_model=False, strict_alternation=True)
    rules = (ws / "scenarios" / NAME / "BusinessRules.md").read_text(encoding="utf-8")
    assert "update_employee_leave_balance" in rules  # Init's revision is what is on disk


async def test_max_iterations_reached_ends_failed_with_the_report(tmp_path: Path) -> None:
    """With max_iterations = 1 the first, failing iteration ends the scenario `failed`."""
    ws = workspace(tmp_path, policy="max_iterations = 1")
    state, _ = await run_to_end(ws, environ={})
    report = f"scenarios/{NAME}/execution_outputs/iteration_1/layer1_problems_report.json"
    assert ("failed", report) == (state.phase, state.last_report)
    assert (ws / report).is_file()


# A model that counts tokens as baton's estimator does and thinks only when asked: the run
# over HTTP is then the offline run, call for call.
# Summaries asked for at the threshold in both runs: asked for in the background, an agent
# on a model with latency (the SDK's) compacts wherever the answer finds it, and the offline
# one where it waits for it (docs/context.md, "Background compaction").
AT_THE_THRESHOLD = "".join(
    f"[actors.{actor}]\nprecompact_at = 1\n" for actor in ("init", "execute", "scheduler")
)
LIKE_OFFLINE = "".join(
    f'[actors.{actor}]\nmodel = "claude-opus-4-5"\nthinking = "off"\nprecompact_at = 1\n'
    for actor in ("init", "execute", "scheduler")
)


def output_files(ws: Path) -> dict[Path, bytes]:
    outputs = ws / "scenarios" / NAME / "execution_outputs"
    return {p.relative_to(ws): p.read_bytes() for p in sorted(outputs.rglob("*.json"))}


async def test_the_same_run_over_http_through_the_real_sdk_is_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Driven through AnthropicModel and the stand-in (answering with the same script), the
    run makes the same calls and writes the same artifacts as offline."""
    offline_ws = workspace(tmp_path / "offline")
    (offline_ws / "baton.toml").write_text(AT_THE_THRESHOLD, encoding="utf-8")
    await run_to_end(offline_ws, environ={})
    online_ws = workspace(tmp_path / "online")
    (online_ws / "baton.toml").write_text(LIKE_OFFLINE, encoding="utf-8")
    async with MessagesAPIStandIn(model=OfflineModel(online_ws)) as api:
        for key, value in api.env().items():
            monkeypatch.setenv(key, value)
        state, _ = await run_to_end(online_ws, environ=api.env())
        requests = [r for r in api.requests if r.endpoint == "messages"]
    assert ("completed", 2) == (state.phase, state.iteration)
    assert all(r.status == 200 for r in requests)

    def calls(ws: Path) -> dict[str, tuple[list[tuple[int, str]], list[tuple[int, str, int]]]]:
        """Each actor's calls, by turn (a summary asked for in the background runs beside
        the turns, and actors interleave, by timing), and its compactions in order."""
        by_actor: dict[str, tuple[list[tuple[int, str]], list[tuple[int, str, int]]]] = {}
        for e in read_token_log(ws):
            made, compacted = by_actor.setdefault(e.get("actor", ""), ([], []))
            if e["event"] == "model.call":
                made.append((e["turn"], e["purpose"]))
            elif e["event"] == "context.compacted":
                compacted.append((e["tokens_before"], e["mode"], e["tokens_after"]))
        return {actor: (sorted(made), compacted) for actor, (made, compacted) in by_actor.items()}

    assert calls(offline_ws) == calls(online_ws)
    assert output_files(offline_ws) == output_files(online_ws)


async def test_the_run_on_the_current_models_with_thinking_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the defaults (Opus 5.5 thinking always, Sonnet 5.5 adaptive, Haiku 5.5 off) the
    stand-in adds thinking blocks, counts with the new tokenizer and checks every rule: the
    scenario still completes, no request is refused, the tool loops send thinking back, and
    the artifacts are the offline run's."""
    offline_ws = workspace(tmp_path / "offline")
    await run_to_end(offline_ws, environ={})
    online_ws = workspace(tmp_path / "online")
    async with MessagesAPIStandIn(model=OfflineModel(online_ws), redacted_thinking_every=5) as api:
        for key, value in api.env().items():
            monkeypatch.setenv(key, value)
        state, _ = await run_to_end(online_ws, environ=api.env())
        requests = api.requests_to("messages")
    assert ("completed", 2) == (state.phase, state.iteration)
    assert {200} == {r.status for r in requests}
    assert {"claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"} == {
        r.body["model"] for r in requests
    }
    sent_back = continuations(requests)
    assert sent_back
    assert all(content[0]["type"] == "thinking" for content in sent_back)
    lines = read_token_log(online_ws)
    assert {"init", "execute"} <= {e["actor"] for e in lines if e["event"] == "context.compacted"}
    assert output_files(offline_ws) == output_files(online_ws)
