"""SIGKILL `baton run` (sqlite mailboxes) in the middle of leave_application, restart it, and
check that the scenario completes having lost no message, applied no handoff twice and paid for
no completed model step twice.

CI runs `CRASH_ROUNDS` rounds (3); `BATON_CRASH_ROUNDS=10` (or more) is the full mode. Each
round uses a fresh workspace and kills the process `KILLS_PER_ROUND` times at random points
of the scenario (a number of model calls in, plus a few milliseconds) drawn from a seeded
generator; every failure message names the seed, which `BATON_CRASH_SEED` replays.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baton.agents.journal import decode_line
from baton.mailboxes.sqlite import DATABASE
from baton.testing import read_token_log
from tests.e2e.test_process import BATON, SCENARIO, env, scenario_workspace

CRASH_ROUNDS = int(os.environ.get("BATON_CRASH_ROUNDS", "3"))
KILLS_PER_ROUND = 2
RUN_DEADLINE = 120.0


@dataclass
class Outcome:
    """What one scenario run left on disk, reduced to what the checks compare."""

    phase: str
    iteration: int
    handoffs: list[str]
    iterations: list[str]
    envelopes_left: int
    dead_letters: list[tuple[str, str, str]]
    steps: Counter[tuple[str, str, str, int]]
    logged_calls: Counter[tuple[str, str, str, int]]


def run_command(scenarios: tuple[str, ...]) -> list[str]:
    submits = [arg for name in scenarios for arg in ("--submit", name)]
    return ["run", *submits, "--auto-approve", "--exit-when-idle"]


def start(workspace: Path, scenarios: tuple[str, ...] = (SCENARIO,)) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [BATON, *run_command(scenarios), "--workspace", str(workspace)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env(),
    )


def scenario_state(workspace: Path, scenario: str = SCENARIO) -> dict[str, Any] | None:
    path = workspace / ".baton" / "scheduler" / f"{scenario}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def journal_steps(workspace: Path, scenario: str = SCENARIO) -> Counter[tuple[str, str, str, int]]:
    """Every model reply of `scenario` journaled, as (actor, conversation, kind, turn or
    compaction)."""
    steps: Counter[tuple[str, str, str, int]] = Counter()
    for path in (workspace / ".baton" / "journal").glob(f"*/{scenario}.jsonl"):
        for line in path.read_bytes().splitlines(keepends=True):
            record = decode_line(line)
            if record is None:
                continue  # a torn last line, as a kill leaves it
            key = reply_key(path.parent.name, path.stem, record)
            if key is not None:
                steps[key] += 1
    return steps


def reply_key(
    actor: str, conversation: str, record: dict[str, Any]
) -> tuple[str, str, str, int] | None:
    """The model reply a journal record holds, as the crash tests count them, or None."""
    if record.get("type") == "response":
        return (actor, conversation, "response", record["turn"])
    if record.get("type") == "summary":
        # One compaction may ask twice: in the background, then again at the threshold when
        # that summary no longer fits (docs/context.md); each request is answered once.
        return (
            actor,
            conversation,
            f"summary through {record.get('through_seq')}",
            record["compaction"],
        )
    return None


def logged_calls(
    workspace: Path, scenario: str | None = None
) -> Counter[tuple[str, str, str, int]]:
    """`model.call` lines per (actor, conversation, purpose, turn): of `scenario`, or all."""
    calls: Counter[tuple[str, str, str, int]] = Counter()
    for record in read_token_log(workspace, skip_torn=True):  # a SIGKILL may tear a line
        if record.get("event") == "model.call" and scenario in (None, record.get("scenario")):
            key = (record["actor"], record["conversation"], record["purpose"], record["turn"])
            calls[key] += 1
    return calls


def outcome(workspace: Path, scenario: str = SCENARIO) -> Outcome:
    state = scenario_state(workspace, scenario)
    assert state is not None, "the scenario was never saved"
    left = envelopes_left(workspace)
    with sqlite3.connect(workspace / DATABASE) as db:
        dead = db.execute("SELECT id, recipient, reason FROM dead_letters").fetchall()
    db.close()
    outputs = workspace / "scenarios" / scenario / "execution_outputs"
    return Outcome(
        phase=state["phase"],
        iteration=state["iteration"],
        handoffs=state["applied_handoffs"],
        iterations=sorted(p.name for p in outputs.iterdir()) if outputs.is_dir() else [],
        envelopes_left=left,
        dead_letters=dead,
        steps=journal_steps(workspace, scenario),
        logged_calls=logged_calls(workspace, None if scenario == SCENARIO else scenario),
    )


def assert_ended_as(baseline: Outcome, got: Outcome, context: str) -> None:
    """The killed and restarted run ended as the clean one did, and lost and repeated
    nothing."""
    assert ("completed", 2) == (got.phase, got.iteration), context
    assert baseline.iterations == got.iterations, context
    # No message lost: nothing left unacked, nothing dead-lettered.
    assert (0, []) == (got.envelopes_left, got.dead_letters), context
    # No handoff applied twice: the same handoffs as the clean run, each once.
    assert baseline.handoffs == got.handoffs, context
    # No completed model step repeated: every journaled reply once, the same as the clean
    # run; and no call that was logged (so journaled first) was made again.
    assert [] == [k for k, n in got.steps.items() if n > 1], context
    assert set(baseline.steps) == set(got.steps), context
    assert [] == [k for k, n in got.logged_calls.items() if n > 1], context


def run_to_end(workspace: Path, scenarios: tuple[str, ...] = (SCENARIO,)) -> int:
    proc = start(workspace, scenarios)
    try:
        return proc.wait(timeout=RUN_DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def envelopes_left(workspace: Path) -> int:
    with sqlite3.connect(workspace / DATABASE) as db:
        left: int = db.execute("SELECT COUNT(*) FROM envelopes").fetchone()[0]
    db.close()
    return left


def exited_within(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    """Wait up to `seconds` for the process to exit; whether it did."""
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def drain(workspace: Path) -> None:
    """`baton run` with nothing submitted, stopped (SIGTERM) once no envelope is left."""
    proc = subprocess.Popen(
        [BATON, "run", "--workspace", str(workspace)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env(),
    )
    try:
        deadline = time.monotonic() + RUN_DEADLINE
        while envelopes_left(workspace) and time.monotonic() < deadline:
            assert not exited_within(proc, 0.05), "the draining run exited on its own"
        proc.send_signal(signal.SIGTERM)
        assert 0 == proc.wait(timeout=RUN_DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def model_calls(workspace: Path) -> int:
    """`model.call` lines in the token log so far (a torn last line counts: its call is done)."""
    path = workspace / ".baton" / "logs" / "tokens.jsonl"
    return path.read_text(encoding="utf-8").count('"event": "model.call"') if path.exists() else 0


def run_and_kill(
    workspace: Path, at_calls: int, jitter: float, scenarios: tuple[str, ...] = (SCENARIO,)
) -> bool:
    """Start the scenarios' run and SIGKILL it `jitter` seconds after the token log reaches
    `at_calls` model calls; False if the run ended first."""
    proc = start(workspace, scenarios)
    try:
        deadline = time.monotonic() + RUN_DEADLINE
        while model_calls(workspace) < at_calls and time.monotonic() < deadline:
            if exited_within(proc, 0.005):  # the poll interval of the log
                return False
        # Somewhere inside the step that follows, not always at its start.
        if exited_within(proc, jitter):
            return False
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=RUN_DEADLINE)
        return True
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigkill_mid_scenario_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    seed = int(os.environ.get("BATON_CRASH_SEED", str(random.SystemRandom().randrange(10**6))))
    rng = random.Random(seed)  # noqa: S311 - a replayable kill schedule, not a secret

    clean = scenario_workspace(tmp_path / "clean")
    assert 0 == run_to_end(clean)
    baseline = outcome(clean)
    total_calls = model_calls(clean)
    assert baseline.steps, (
        "the clean run journaled no model reply: the step checks would be vacuous"
    )
    assert ("completed", 2, ["iteration_1", "iteration_2"]) == (
        baseline.phase,
        baseline.iteration,
        baseline.iterations,
    )

    kills = 0
    for round_ in range(CRASH_ROUNDS):
        workspace = scenario_workspace(tmp_path / f"round{round_}")
        for _ in range(KILLS_PER_ROUND):
            state = scenario_state(workspace)
            if state is not None and state["phase"] == "completed":
                break  # finished before this kill: a new submit would start a fresh run
            # Anywhere in what is left of the scenario, counted in model calls: a kill by the
            # clock can land before start-up is done, or after the resumed run has finished.
            done = model_calls(workspace)
            if total_calls - done < 4:
                break
            target = rng.randint(done + 1, total_calls - 3)
            kills += run_and_kill(workspace, target, rng.uniform(0.0, 0.03))
        state = scenario_state(workspace)
        if state is None or state["phase"] != "completed":
            assert 0 == run_to_end(workspace), f"round {round_}: the restarted run failed"
        if envelopes_left(workspace):
            # Stopped after the scenario completed with messages still stored (the agent's
            # closing turns, an ask; or one a restarted run's shutdown left for the next
            # start): the next start works them off, as a user's restart would.
            drain(workspace)
        assert_ended_as(baseline, outcome(workspace), f"round {round_} (seed {seed})")
    assert kills >= CRASH_ROUNDS, (
        f"only {kills} kills landed mid-run (seed {seed}; a clean run makes {total_calls} calls)"
    )


CONCURRENT = ("leave_a", "leave_b", "leave_c")


def concurrent_workspace(root: Path) -> Path:
    """The shipped scenario three times under other names, every path in it renamed."""
    source = scenario_workspace(root / "source") / "scenarios" / SCENARIO
    for name in CONCURRENT:
        folder = root / "ws" / "scenarios" / name
        folder.mkdir(parents=True)
        for file in ("scenario.toml", "offline_script.json"):
            text = (source / file).read_text(encoding="utf-8")
            (folder / file).write_text(text.replace(SCENARIO, name), encoding="utf-8")
    return root / "ws"


def unfinished(workspace: Path) -> tuple[str, ...]:
    """The scenarios not completed yet (never started, or interrupted)."""
    states = {name: scenario_state(workspace, name) for name in CONCURRENT}
    return tuple(
        name for name, state in states.items() if state is None or state["phase"] != "completed"
    )


def test_sigkill_with_three_scenarios_in_flight_loses_nothing_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    """Three scenarios run side by side in one `baton run` (Init and Execute work on several
    conversations at once); killed twice mid-way and restarted, each completes as its clean
    run did: the same handoffs once, every journaled reply once, nothing left or dead."""
    seed = int(os.environ.get("BATON_CRASH_SEED", str(random.SystemRandom().randrange(10**6))))
    rng = random.Random(seed)  # noqa: S311 - a replayable kill schedule, not a secret

    clean = concurrent_workspace(tmp_path / "clean")
    assert 0 == run_to_end(clean, CONCURRENT)
    baselines = {name: outcome(clean, name) for name in CONCURRENT}
    total_calls = model_calls(clean)
    for name, baseline in baselines.items():
        assert baseline.steps, f"{name}: no journaled reply, the checks would be vacuous"
        assert ("completed", 2) == (baseline.phase, baseline.iteration), name
    # Side by side, not one after another: a scenario's first model call comes before
    # another's last.
    spans = {
        name: [
            i
            for i, r in enumerate(read_token_log(clean))
            if r.get("event") == "model.call" and r.get("scenario") == name
        ]
        for name in CONCURRENT
    }
    assert all(spans[a][0] < spans[b][-1] for a in CONCURRENT for b in CONCURRENT if a != b)

    workspace = concurrent_workspace(tmp_path / "killed")
    kills = 0
    for _ in range(KILLS_PER_ROUND):
        done = model_calls(workspace)
        if total_calls - done < 4:
            break
        if not unfinished(workspace):
            break
        target = rng.randint(done + 1, total_calls - 3)
        # Resubmitting a finished scenario would start a fresh run: submit only the others
        # (a finished one's messages still in flight are worked off all the same).
        kills += run_and_kill(workspace, target, rng.uniform(0.0, 0.03), unfinished(workspace))
    if unfinished(workspace):
        restarted = run_to_end(workspace, unfinished(workspace))
        assert 0 == restarted, f"seed {seed}: the restarted run failed"
    if envelopes_left(workspace):
        drain(workspace)
    for name in CONCURRENT:
        assert_ended_as(baselines[name], outcome(workspace, name), f"{name} (seed {seed})")
    assert kills >= 1, f"no kill landed mid-run (seed {seed}; {total_calls} calls in all)"
