"""The key-fact ledger shown on its own: for a strategy that carries no summary to merge it
into (`sliding_window`), or for the facts its summary does not carry yet (`summarize`;
docs/context.md, "Key-fact ledger").

The view is the same JSON a summary would get (`key_paths`, `key_ids`), capped at the
budget's `ledger_max_tokens`, in one user turn inside `<key_facts>` tags.
"""

from __future__ import annotations

import json
from typing import Any

from baton.context.ledger import KeyFactLedger
from baton.context.payload import Message
from baton.context.steps import render_user

LEDGER_TAG = "key_facts"
LEDGER_HEADING = (
    "Key facts of this conversation (paths and ids kept verbatim while older turns are "
    "dropped; re-read the files for their content):"
)


def ledger_json(
    ledger: KeyFactLedger, *, facts: int | None, max_tokens: int, start: int = 0
) -> str | None:
    """The first `facts` facts but the first `start`, under the cap, as compact JSON; None
    when none is shown."""
    data: dict[str, Any] = {}
    ledger.merge_into(data, start=start, limit=facts, max_tokens=max_tokens)
    if not data:
        return None
    return json.dumps(data, ensure_ascii=False)


def ledger_message(
    ledger: KeyFactLedger, *, facts: int | None, max_tokens: int, start: int = 0
) -> Message | None:
    """The ledger (`ledger_json`'s facts) as a user turn, or None when it shows nothing."""
    text = ledger_json(ledger, facts=facts, max_tokens=max_tokens, start=start)
    if text is None:
        return None
    return render_user(f"{LEDGER_HEADING}\n<{LEDGER_TAG}>\n{text}\n</{LEDGER_TAG}>")
