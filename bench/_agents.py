"""What bench/idle.py and bench/resume.py share: synthetic journals built with the real
`Conversation` API, an instant model, and an agent keyed by conversation, embedded as users
embed baton (`Runtime.open` + `spawn`)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from baton import handler
from baton.agents.agent import AgentActor
from baton.agents.agent_config import AgentConfig
from baton.agents.agent_setup import AgentSetup
from baton.agents.journal import FileJournalStore, encode_line
from baton.context.conversation import Conversation
from baton.context.payload import Payload
from baton.context.records import dump_record
from baton.context.tokens import ASCII_CHARS_PER_TOKEN
from baton.models.protocol import ModelLimits, ModelResponse
from baton.runtime.token_log import TokenLog

ACTOR = "chat"
WORDS = "the scenario reads its design files and checks every rule before it writes "


def journal_bytes(tokens: int, steps: int, rounds: int = 5, *, finished: bool = True) -> bytes:
    """A conversation's journal, `steps` tool steps over `rounds` rounds holding about
    `tokens` tokens, every record as the agent loop writes it (a `response` record before
    each `step`); `finished`: its last step answers, else it asked for a tool (a round a
    kill interrupted, due a model call)."""
    conversation = Conversation(id="c")
    per_step = max(1, int(tokens * ASCII_CHARS_PER_TOKEN / steps))
    body = (WORDS * (per_step // len(WORDS) + 1))[:per_step]
    per_round = max(1, steps // rounds)
    lines: list[bytes] = []
    for seq in range(steps):
        if seq % per_round == 0:
            record = conversation.start_round(f"Round {seq // per_round}: go on with the work.")
            lines.append(encode_line(dump_record(record)))
        last = finished and seq == steps - 1
        use = f"toolu_{seq:06d}"
        content: list[dict[str, Any]] = [{"type": "text", "text": f"Step {seq}: reading."}]
        if not last:
            content.append(
                {"type": "tool_use", "id": use, "name": "Read", "input": {"path": f"f{seq}.md"}}
            )
        results = [] if last else [{"type": "tool_result", "tool_use_id": use, "content": body}]
        usage = {"input_tokens": 1000 + seq * (tokens // steps), "output_tokens": 40}
        response = {
            "content": content,
            "stop_reason": "end_turn" if last else "tool_use",
            "usage": usage,
            "model": "bench",
            "latency_ms": 1.0,
        }
        lines.append(
            encode_line(
                {
                    "type": "response",
                    "turn": seq,
                    "response": response,
                    "sent_estimate": usage["input_tokens"],
                }
            )
        )
        step = conversation.append_step(
            content,
            results,
            usage,
            stop_reason=response["stop_reason"],
            sent_estimate=usage["input_tokens"],
        )
        lines.append(encode_line(dump_record(step)))
    return b"".join(lines)


def write_journals(workspace: Path, conversations: list[str], data: bytes) -> None:
    """The same journal under each conversation id (records do not name their conversation)."""
    store = FileJournalStore(workspace)
    folder = store.path(ACTOR, "x").parent
    folder.mkdir(parents=True, exist_ok=True)
    for conversation in conversations:
        store.path(ACTOR, conversation).write_bytes(data)


class Turn(BaseModel):
    """Open a round of `conversation`."""

    conversation: str
    text: str


class Touch(BaseModel):
    """Bring `conversation` into memory, as its last round left it, and let it go idle."""

    conversation: str


class Chat(AgentActor):
    """An agent whose rounds are keyed by the conversation the message names."""

    def actor_key(self, message: object) -> Any:
        if isinstance(message, Turn | Touch):
            return message.conversation
        return super().actor_key(message)

    @handler
    async def turn(self, message: Turn) -> str:
        return await self.loop.run_round(message.conversation, message.text)

    @handler
    async def touch(self, message: Touch) -> None:
        async with self.loop.owning(message.conversation):
            pass


class Instant:
    """A model that answers at once with one short text, noting when each call arrived."""

    name = "bench-instant"
    answers_at_once = True

    def __init__(self) -> None:
        self.calls: list[float] = []  # perf_counter of each call
        self.first_call_wall: float | None = None  # time.time() of the first
        self.called = anyio.Event()

    async def create(self, payload: Payload) -> ModelResponse:
        self.calls.append(time.perf_counter())
        if self.first_call_wall is None:
            self.first_call_wall = time.time()
            self.called.set()
        return ModelResponse(
            content=[{"type": "text", "text": "Noted."}],
            stop_reason="end_turn",
            usage={"input_tokens": 50_000, "output_tokens": 3},
            model=self.name,
            latency_ms=0.0,
        )

    async def limits(self) -> ModelLimits:
        return ModelLimits(
            model=self.name, context_window=1_000_000, max_output_tokens=32_000, source="config"
        )


def chat_setup(workspace: Path, model: Instant, token_log: TokenLog, **config: Any) -> AgentSetup:
    """The bench agent: a big window (nothing compacts), its journal in `workspace`."""
    settings = {
        "model": "bench-instant",
        "context_window": 1_000_000,
        "compact_threshold": 800_000,
        "keep_recent_steps": 5,
        "max_concurrent_keys": 8,
        **config,
    }
    return AgentSetup(
        role=ACTOR,
        config=AgentConfig.model_validate(settings),
        model=model,  # type: ignore[arg-type]  # the Model protocol, structurally
        system_prompt="You are a careful assistant.",
        journal=FileJournalStore(workspace),
        token_log=token_log,
        model_retry=None,
    )


def rss_mb(pid: int | None = None) -> tuple[float, float]:
    """Resident and peak resident set of a process (this one by default), in MB, as `ps`
    and the kernel's OOM killer see them."""
    status = Path(f"/proc/{pid or os.getpid()}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024
