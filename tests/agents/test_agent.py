"""AgentActor: the loop with tools, compaction, handoffs, and resuming after a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from baton import Actor, Runtime, handler
from baton.agents._agent_state import load_state
from baton.agents.agent import AgentActor
from baton.agents.agent_config import AgentConfig
from baton.agents.agent_setup import AgentSetup, ToolHooks
from baton.agents.journal import FileJournalStore
from baton.agents.messages import Prompt
from baton.agents.tools import Sandbox, Toolbox, ToolOutcome, file_tools
from baton.context.strategy import ContextBudget
from baton.context.validation import validate_request
from baton.models.scripted import Script, ScriptedModel
from baton.pipeline.agent_context import AgentContext
from baton.pipeline.messages import Dispatch, HandoffDelivered, RoundEnded
from baton.pipeline.roles import InitActor, agent_setup, role_toolbox, shipped_prompt
from baton.runtime.supervision import SupervisorPolicy
from baton.testing import capture_token_log


def config(**overrides: Any) -> AgentConfig:
    settings: dict[str, Any] = {
        "model": "claude-opus-4-5",
        "context_window": 200_000,
        "compact_threshold": 150_000,
        "keep_recent_steps": 3,
    }
    settings.update(overrides)
    return AgentConfig.model_validate(settings)


def scripted(turns: list[Any], actor: str = "init") -> ScriptedModel:
    return ScriptedModel(Script.model_validate({"actors": {actor: turns}}))


def assert_all_requests_valid(model: ScriptedModel) -> None:
    for call in model.calls:
        assert [] == validate_request(call.payload, require_model=False, strict_alternation=True)


class Recorder(Actor):
    """Stands in for the Scheduler: keeps every handoff and round end it is sent."""

    def __init__(self, received: list[HandoffDelivered], ended: list[RoundEnded] | None = None):
        self.received = received
        self.ended = ended if ended is not None else []

    @handler
    async def delivered(self, message: HandoffDelivered) -> None:
        self.received.append(message)

    @handler
    async def round_ended(self, message: RoundEnded) -> None:
        self.ended.append(message)


async def spawn_init_beside_recorder(
    rt: Runtime,
    model: ScriptedModel,
    journal: FileJournalStore,
    received: list[HandoffDelivered],
    ended: list[RoundEnded],
) -> None:
    """`init` with the default config, and a `Recorder` as the Scheduler it reports to."""
    await rt.spawn("scheduler", Recorder, received, ended)
    assert rt.workspace is not None
    setup = agent_setup(
        "init",
        config(),
        workspace=rt.workspace,
        model=model,
        journal=journal,
        token_log=rt.token_log,
    )
    await rt.spawn("init", InitActor, setup)


def read(path: str) -> dict[str, Any]:
    return {"tool_use": {"name": "Read", "input": {"path": path}}}


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool_use": {"name": "Write", "input": {"path": path, "content": content}}}


DESIGN = "scenarios/leave/"
DESIGN_FILES = {
    "unified_scenario_design_path": f"{DESIGN}unified_scenario_design.yaml",
    "business_rules_path": f"{DESIGN}BusinessRules.md",
    "format_specifications_path": f"{DESIGN}format_specifications.json",
}


def designs_and_hands_off(*before: Any) -> ScriptedModel:
    """Init, after the `before` turns: writes the three design files, hands them off, ends."""
    return scripted(
        [
            *before,
            {"tool_use": [write(path, "x: 1\n")["tool_use"] for path in DESIGN_FILES.values()]},
            {
                "tool_use": {
                    "name": "handoff_to_execute",
                    "input": {"user_requirement": "请假申请", "design_artifacts": DESIGN_FILES},
                }
            },
            "Handed off.",
        ]
    )


async def test_a_multi_round_conversation_uses_tools_and_compacts(tmp_path: Path) -> None:
    """Tools run, long results push the context past the threshold, the agent compacts and
    every request it sent was valid; two rounds answer two prompts."""
    big = "\n".join(f"line {n}: leave balance record {'x' * 80}" for n in range(200))
    (tmp_path / "big.txt").write_text(big)
    model = scripted(
        [
            read("big.txt"),
            write("notes.md", "# notes\nbalance rules summarised"),
            read("big.txt"),
            "Round one done.",
            read("notes.md"),
            "Round two done.",
        ]
    )
    cfg = config(context_window=40_000, compact_threshold=12_000, keep_recent_steps=2)
    async with Runtime.open(tmp_path) as rt:
        setup = agent_setup(
            "init",
            cfg,
            workspace=tmp_path,
            model=model,
            journal=FileJournalStore(tmp_path),
            token_log=rt.token_log,
            write_paths=("notes.md",),  # `main` has no scenario folder to write in
        )
        await rt.spawn("init", InitActor, setup)
        with capture_token_log() as lines:
            assert "Round one done." == await rt.ask("init", Prompt(text="summarise big.txt"))
            assert "Round two done." == await rt.ask("init", Prompt(text="and the notes?"))
    assert_all_requests_valid(model)
    turn_calls = [
        line for line in lines if line["event"] == "model.call" and line["purpose"] == "turn"
    ]
    assert [0, 1, 2, 3, 4, 5] == [line["turn"] for line in turn_calls]
    compacted = [line for line in lines if line["event"] == "context.compacted"]
    assert len(compacted) >= 1
    assert all(c["tokens_after"] < c["tokens_before"] for c in compacted)
    assert {"init"} == {line["actor"] for line in lines}
    assert {"main"} == {line["conversation"] for line in lines}
    assert (tmp_path / "notes.md").read_text().startswith("# notes")


class Gate:
    """A tool that blocks on its first run (the moment of the crash), then returns."""

    name = "Gate"
    description = "waits for the gate"

    class Input(BaseModel):
        pass

    input_model = Input
    input_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}

    def __init__(self, entered: anyio.Event, *, block: bool) -> None:
        self.entered = entered
        self.block = block

    async def run(self, args: Any) -> ToolOutcome:
        self.entered.set()
        if self.block:
            await anyio.sleep_forever()
        return ToolOutcome("gate open")


def gated_setup(workspace: Path, model: ScriptedModel, gate: Gate, token_log: Any) -> AgentSetup:
    def tools(hooks: ToolHooks) -> Toolbox:
        return Toolbox([*file_tools(Sandbox(workspace, write_paths=("out/",))), gate])

    return AgentSetup(
        role="execute",
        config=config(),
        model=model,
        system_prompt="You are a test agent.",
        journal=FileJournalStore(workspace),
        token_log=token_log,
        tools=tools,
    )


SCRIPT = [
    write("out/a.txt", "first"),
    {"tool_use": {"name": "Gate", "input": {}}},
    "Finished after the gate.",
    "Second prompt answered.",
]


async def test_a_crash_mid_round_resumes_without_repeating_a_model_call(tmp_path: Path) -> None:
    """Killed while a reply's tools run, the agent resumes: that reply is reused, not re-asked."""
    first_model = scripted(SCRIPT, actor="agent")
    entered = anyio.Event()
    with anyio.CancelScope() as crash:
        async with Runtime.open(tmp_path, shutdown_timeout=0) as rt:
            setup = gated_setup(tmp_path, first_model, Gate(entered, block=True), rt.token_log)
            await rt.spawn("agent", AgentActor, setup)
            await rt.tell("agent", Prompt(text="do the work"))
            await entered.wait()
            crash.cancel()  # the process dies here: no graceful end of the round
    assert [0, 1] == [call.context.turn for call in first_model.calls]

    second_model = scripted(SCRIPT, actor="agent")
    async with Runtime.open(tmp_path) as rt:
        setup = gated_setup(tmp_path, second_model, Gate(anyio.Event(), block=False), rt.token_log)
        await rt.spawn("agent", AgentActor, setup)
        # Queued behind the resumed round, so it returns once that round has finished.
        assert "Second prompt answered." == await rt.ask("agent", Prompt(text="next"))
    assert [2, 3] == [call.context.turn for call in second_model.calls]
    assert_all_requests_valid(second_model)
    records = await FileJournalStore(tmp_path).read("agent", "main")
    steps = [r["step"] for r in records if r["type"] == "step"]
    assert [0, 1, 2, 3] == [step["seq"] for step in steps]
    gate_result = steps[1]["results"][0]
    assert "gate open" in json.dumps(gate_result)
    assert "first" == (tmp_path / "out/a.txt").read_text()
    # The reused reply's step carries what its payload was estimated at, as a live one does:
    # replay calibrates the token estimator with it.
    sent = {r["turn"]: r["sent_estimate"] for r in records if r["type"] == "response"}
    assert all(isinstance(sent[step["seq"]], int) for step in steps)
    assert [sent[step["seq"]] for step in steps] == [step["sent_estimate"] for step in steps]


class _DiesAfter(FileJournalStore):
    """A journal whose process dies right after the first record of type `kind` is on disk
    (a step: before the compaction it made due could run; a round: before its facts)."""

    def __init__(self, workspace: Path, crash: anyio.CancelScope, kind: str) -> None:
        super().__init__(workspace)
        self.crash = crash
        self.kind = kind

    async def append(self, actor: str, conversation: str, record: Any) -> None:
        await super().append(actor, conversation, record)
        if record.get("type") == self.kind:
            self.crash.cancel()
            await anyio.sleep_forever()  # the process is gone: nothing more is written


async def test_a_compaction_due_when_the_process_died_runs_before_the_next_call(
    tmp_path: Path,
) -> None:
    """The uninterrupted run compacts right after the step that crossed the threshold; a run
    resumed from a journal that ends with that step compacts before its next model call."""
    big = "\n".join(f"line {n}: leave balance record {'x' * 80}" for n in range(200))
    (tmp_path / "big.txt").write_text(big)
    turns = [read("big.txt"), "Done.", "Nothing else."]
    cfg = config(context_window=40_000, compact_threshold=6_000, keep_recent_steps=1)

    def setup(model: ScriptedModel, journal: FileJournalStore, token_log: Any) -> AgentSetup:
        return agent_setup(
            "init", cfg, workspace=tmp_path, model=model, journal=journal, token_log=token_log
        )

    first = scripted(turns)
    with anyio.CancelScope() as crash:
        async with Runtime.open(tmp_path, shutdown_timeout=0) as rt:
            journal = _DiesAfter(tmp_path, crash, "step")
            await rt.spawn("init", InitActor, setup(first, journal, rt.token_log))
            await rt.tell("init", Prompt(text="summarise big.txt"))
            await anyio.sleep_forever()
    records = await FileJournalStore(tmp_path).read("init", "main")
    # `facts`: the prompt names a file (`big.txt`), which joins the key-fact ledger.
    assert ["round", "facts", "response", "step"] == [r["type"] for r in records]

    second = scripted(turns)
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("init", InitActor, setup(second, FileJournalStore(tmp_path), rt.token_log))
        # Queued behind the resumed round, so it returns once that round has finished.
        assert "Nothing else." == await rt.ask("init", Prompt(text="anything else?"))
    assert [("compaction", 1), ("turn", 1), ("turn", 2)] == [
        (call.context.purpose, call.context.turn) for call in second.calls
    ]
    assert_all_requests_valid(second)


async def test_a_crash_during_a_model_call_repeats_only_that_call(tmp_path: Path) -> None:
    """A call that never completed is made again after the restart; completed ones are not."""
    entered = anyio.Event()
    first_model = scripted(SCRIPT, actor="agent")
    with anyio.CancelScope() as crash:
        async with Runtime.open(tmp_path, shutdown_timeout=0) as rt:
            setup = gated_setup(tmp_path, first_model, Gate(entered, block=False), rt.token_log)
            await rt.spawn("agent", AgentActor, setup)
            await rt.tell("agent", Prompt(text="do the work"))
            await entered.wait()  # turn 1's tool ran; the crash hits before turn 2 is journaled
            crash.cancel()
    completed = {call.context.turn for call in first_model.calls}
    records = await FileJournalStore(tmp_path).read("agent", "main")
    journaled = {r["turn"] for r in records if r["type"] == "response"}
    second_model = scripted(SCRIPT, actor="agent")
    async with Runtime.open(tmp_path) as rt:
        setup = gated_setup(tmp_path, second_model, Gate(anyio.Event(), block=False), rt.token_log)
        await rt.spawn("agent", AgentActor, setup)
        assert "Second prompt answered." == await rt.ask("agent", Prompt(text="next"))
    repeated = {call.context.turn for call in second_model.calls} & journaled
    assert set() == repeated
    assert {0, 1, 2, 3} == completed | {call.context.turn for call in second_model.calls}


async def test_an_invalid_handoff_is_corrected_on_the_next_step(tmp_path: Path) -> None:
    """A handoff with bad fields comes back as an error naming them; the fixed call delivers."""
    files, design = DESIGN_FILES, DESIGN
    model = scripted(
        [
            {"tool_use": [write(path, "x: 1\n")["tool_use"] for path in files.values()]},
            {"tool_use": {"name": "handoff_to_execute", "input": {"design_artifacts": "all"}}},
            {
                "tool_use": {
                    "name": "handoff_to_execute",
                    "input": {
                        "user_requirement": "生成请假申请场景的评测样本",
                        "design_artifacts": files,
                    },
                }
            },
            "Handed off.",
        ]
    )
    received: list[HandoffDelivered] = []
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("scheduler", Recorder, received)
        setup = agent_setup(
            "init",
            config(),
            workspace=tmp_path,
            model=model,
            journal=FileJournalStore(tmp_path),
            token_log=rt.token_log,
            write_paths=(design,),  # `main` has no scenario folder to write in
        )
        await rt.spawn("init", InitActor, setup)
        with capture_token_log() as lines:
            await rt.ask("init", Prompt(text="design the leave scenario"))
    records = await FileJournalStore(tmp_path).read("init", "main")
    steps = [r["step"] for r in records if r["type"] == "step"]
    refused = steps[1]["results"][0]
    assert refused["is_error"] is True
    text = json.dumps(refused, ensure_ascii=False)
    assert "user_requirement" in text
    assert "design_artifacts" in text
    assert 1 == len(received)
    package = received[0].package
    assert ("init_to_execute", files) == (package.handoff_type, package.design_artifacts)
    facts = {r["type"] for r in records}
    assert "facts" in facts
    sent = [line for line in lines if line["event"] == "handoff.sent"]
    assert [("init", "scheduler", "init_to_execute")] == [
        (line["from"], line["to"], line["handoff_type"]) for line in sent
    ]


async def test_a_dispatched_round_without_a_handoff_is_reported(tmp_path: Path) -> None:
    """A scenario round that ends without a handoff tells the Scheduler (with the last text);
    one that handed off does not; the `handoff` journal record carries that across a replay."""
    model = designs_and_hands_off("I would rather not decide yet.")
    received: list[HandoffDelivered] = []
    ended: list[RoundEnded] = []
    journal = FileJournalStore(tmp_path)
    async with Runtime.open(tmp_path) as rt:
        await spawn_init_beside_recorder(rt, model, journal, received, ended)
        for task in ("design it", "design it now"):
            context = AgentContext(task_summary=task)
            await rt.ask(
                "init", Dispatch(scenario="leave", conversation="leave@2", agent_context=context)
            )
    assert [("leave", "leave@2", "init", "I would rather not decide yet.")] == [
        (e.scenario, e.conversation, e.source, e.text) for e in ended
    ]
    assert [("leave", "leave@2")] == [(r.scenario, r.conversation) for r in received]
    records = await journal.read("init", "leave@2")
    budget = ContextBudget.model_validate(config(), from_attributes=True)
    replayed = load_state("leave@2", records, lambda _: None, budget)  # type: ignore[arg-type,return-value]
    first_round = records[: [r["type"] for r in records].index("round", 1)]
    assert (True, False) == (
        replayed.handed_off,
        load_state("leave@2", first_round, lambda _: None, budget).handed_off,  # type: ignore[arg-type,return-value]
    )
    assert "leave" == replayed.scenario


def test_role_toolboxes_hold_the_documented_tools(tmp_path: Path) -> None:
    """Init gets the file tools and handoff_to_execute; Execute gets return/complete."""
    hooks = ToolHooks(deliver=_never, register_paths=lambda paths: None)
    init = role_toolbox("init", tmp_path, config())(hooks)
    execute = role_toolbox("execute", tmp_path, config())(hooks)
    assert ["Read", "Write", "List", "handoff_to_execute"] == init.names
    assert ["Read", "Write", "List", "return_to_init", "complete_scenario"] == execute.names


async def _never(package: Any) -> None:
    raise AssertionError("not delivered in this test")


@pytest.mark.parametrize("role", ["init", "execute", "scheduler"])
def test_shipped_prompts_state_role_duties_and_context_protocol(role: str) -> None:
    """Each shipped prompt names its role, its duties and the compaction protocol."""
    prompt = shipped_prompt(role)
    assert "# Role" in prompt
    assert "Context protocol" in prompt
    assert "请对当前工作进行总结" in prompt


async def test_a_work_order_delivered_again_runs_one_round(tmp_path: Path) -> None:
    """The same `dispatch_id` twice (a re-sent outbox, a redelivery after a crash) costs one
    round and one report; an older id arriving after a newer one does nothing."""
    model = scripted(["Not yet.", "Still not."])
    received: list[HandoffDelivered] = []
    ended: list[RoundEnded] = []
    journal = FileJournalStore(tmp_path)
    async with Runtime.open(tmp_path) as rt:
        await spawn_init_beside_recorder(rt, model, journal, received, ended)
        replies = []
        for dispatch_id in ("leave#1", "leave#1", "leave#2", "leave#1"):
            order = Dispatch(
                scenario="leave",
                agent_context=AgentContext(task_summary="design it"),
                dispatch_id=dispatch_id,
            )
            replies.append(await rt.ask("init", order))
    records = await journal.read("init", "leave")
    assert ["Not yet.", "Not yet.", "Still not.", ""] == replies
    assert 2 == len(model.calls)
    assert ["leave#1", "leave#2"] == [r["key"] for r in records if r["type"] == "round"]
    # The repeated order re-reports its round end (it may have been lost); the Scheduler
    # dedupes by dispatch id.
    assert ["leave#1", "leave#1", "leave#2"] == [e.dispatch_id for e in ended]


async def test_a_handoff_nobody_can_receive_fails_the_round_and_is_delivered_on_retry(
    tmp_path: Path,
) -> None:
    """With no Scheduler running (a process starting or stopping), the handoff is not the
    model's mistake: nothing is journaled as its tool result, the round fails, and its retry
    delivers the package once from the journaled reply, without calling the model again."""
    model = designs_and_hands_off()
    received: list[HandoffDelivered] = []
    journal = FileJournalStore(tmp_path)
    policy = SupervisorPolicy(max_attempts=2, backoff_initial=0.5)
    async with Runtime.open(tmp_path, policy=policy) as rt:
        setup = agent_setup(
            "init",
            config(),
            workspace=tmp_path,
            model=model,
            journal=journal,
            token_log=rt.token_log,
        )
        await rt.spawn("init", InitActor, setup)
        context = AgentContext(task_summary="design it")
        await rt.tell(
            "init", Dispatch(scenario="leave", conversation="leave", agent_context=context)
        )
        with anyio.fail_after(10):
            while not any(s.failures for s in rt.status() if s.name == "init"):
                await anyio.lowlevel.checkpoint()
        await rt.spawn("scheduler", Recorder, received)  # before the retry's backoff ends
        with anyio.fail_after(10):
            while not received:
                await anyio.lowlevel.checkpoint()
    steps = [r["step"] for r in await journal.read("init", "leave") if r["type"] == "step"]
    assert [False] == [r["is_error"] for r in steps[1]["results"]]
    assert [("leave", "init_to_execute")] == [
        (r.scenario, r.package.handoff_type) for r in received
    ]
    assert [0, 1, 2] == [call.context.turn for call in model.calls]


async def test_a_round_resumed_after_a_crash_before_its_facts_registers_them(
    tmp_path: Path,
) -> None:
    """The work order delivered again after a crash between its round and its facts finishes
    that round and registers the work order's facts, as the uninterrupted round did."""
    model = scripted(["Nothing to do."])
    context = AgentContext(task_summary="look at TICKET-7")
    order = Dispatch(scenario="leave", agent_context=context, dispatch_id="leave#1")

    def setup(journal: FileJournalStore, token_log: Any) -> AgentSetup:
        return agent_setup(
            "init", config(), workspace=tmp_path, model=model, journal=journal, token_log=token_log
        )

    with anyio.CancelScope() as crash:
        async with Runtime.open(tmp_path, shutdown_timeout=0) as rt:
            await rt.spawn("scheduler", Recorder, [])
            await rt.spawn(
                "init", InitActor, setup(_DiesAfter(tmp_path, crash, "round"), rt.token_log)
            )
            await rt.tell("init", order)
            await anyio.sleep_forever()
    records = await FileJournalStore(tmp_path).read("init", "leave")
    assert "round" == records[-1]["type"]
    ended: list[RoundEnded] = []
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("scheduler", Recorder, [], ended)
        await rt.spawn("init", InitActor, setup(FileJournalStore(tmp_path), rt.token_log))
        with anyio.fail_after(10):  # the stored work order, delivered again
            while not ended:
                await anyio.lowlevel.checkpoint()
    records = await FileJournalStore(tmp_path).read("init", "leave")
    facts = {(f["label"], f["value"]) for r in records if r["type"] == "facts" for f in r["facts"]}
    assert {("scenario", "leave"), ("dispatch_id", "leave#1")} <= facts
    assert 1 == [r["type"] for r in records].count("round")
    assert ["Nothing to do."] == [e.text for e in ended]
