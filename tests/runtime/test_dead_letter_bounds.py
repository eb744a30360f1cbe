"""The runtime's dead letters are bounded: by count, by age, and to an excerpt of a big body."""

from __future__ import annotations

import hashlib
from pathlib import Path

import anyio
from pydantic import BaseModel

from baton import Actor, Runtime
from baton.mailboxes import Envelope
from baton.runtime.dead_letters import DeadLetterLog, OmittedPayload


class Note(BaseModel):
    text: str


class Deaf(Actor):
    """Handles nothing: whatever it is told is dead-lettered."""


def test_the_log_keeps_the_newest_letters_younger_than_its_age() -> None:
    """Beyond `keep` the oldest letters go, and so does one older than `max_age`."""
    now = [100.0]
    letters = DeadLetterLog(keep=3, max_age=60, clock=lambda: now[0])
    for n in range(5):
        letters.dead_letter(Envelope("a", Note(text=str(n))), "refused")
    by_count = [letter.envelope.payload.text for letter in letters]
    now[0] += 30
    letters.dead_letter(Envelope("a", Note(text="late")), "refused")
    now[0] += 31
    by_age = [letter.envelope.payload.text for letter in letters]
    assert (["2", "3", "4"], ["late"], 6) == (by_count, by_age, letters.total)


def test_a_big_payload_is_kept_as_an_excerpt_with_its_size_and_hash() -> None:
    """A 1 MB payload is not kept whole: its envelope carries an OmittedPayload with 4 KB of
    its JSON, the JSON's size and SHA-256; a small one stays as it was sent."""
    letters = DeadLetterLog()
    big = Note(text="x" * 1_000_000)
    letters.dead_letter(Envelope("a", big), "refused")
    letters.dead_letter(Envelope("a", Note(text="small")), "refused")
    kept, small = list(letters)
    body = big.model_dump_json().encode()
    assert isinstance(kept.envelope.payload, OmittedPayload)
    assert ("Note", 4096, len(body), hashlib.sha256(body).hexdigest()) == (
        kept.message_type,
        len(kept.envelope.payload.body.text),
        kept.envelope.payload.body.size,
        kept.envelope.payload.body.sha256,
    )
    assert small.body is not None
    assert (Note(text="small"), True) == (small.envelope.payload, small.body.whole)


async def test_the_workspace_config_bounds_the_runtimes_dead_letters(tmp_path: Path) -> None:
    """`[runtime] dead_letter_max` in baton.toml bounds `rt.dead_letters`."""
    (tmp_path / "baton.toml").write_text("[runtime]\ndead_letter_max = 2\n")
    async with Runtime.open(tmp_path) as rt:
        await rt.spawn("deaf", Deaf)
        for n in range(4):
            await rt.tell("deaf", Note(text=str(n)))
        with anyio.fail_after(5):
            await rt.dead_letters.wait_total(4)
        kept = [letter.envelope.payload.text for letter in rt.dead_letters]
    assert ["2", "3"] == kept
