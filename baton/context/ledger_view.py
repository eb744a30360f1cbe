"""The key-fact ledger shown on its own: for a strategy that carries no summary to merge it
into (`sliding_window`; docs/context.md, "Key-fact ledger").

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


def ledger_json(ledger: KeyFactLedger, *, facts: int | None, max_tokens: int) -> str | None:
    """The first `facts` facts under the cap as compact JSON; None when none is shown."""
    data: dict[str, Any] = {}
    ledger.merge_into(data, limit=facts, max_tokens=max_tokens)
    if not data:
        return None
    return json.dumps(data, ensure_ascii=False)


def ledger_message(ledger: KeyFactLedger, *, facts: int | None, max_tokens: int) -> Message | None:
    """The ledger as a user turn, or None when it shows nothing."""
    text = ledger_json(ledger, facts=facts, max_tokens=max_tokens)
    if text is None:
        return None
    return render_user(f"{LEDGER_HEADING}\n<{LEDGER_TAG}>\n{text}\n</{LEDGER_TAG}>")
