"""`EnvelopeCodec`: envelopes to and from the bytes a durable mailbox stores.

A durable mailbox outlives the process, so what it stores must be plain data: the payload is
kept as its type's name plus its JSON, and decoded again by looking the name up among the
message types the recipient handles. Decoding validates, so a stored message that no longer
fits its type is refused with a reason (and dead-lettered by the mailbox), never handed to an
actor half-built.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from baton.mailboxes.envelope import Envelope
from baton.mailboxes.errors import InvalidMessageError

FORMAT = 1


class EnvelopeCodec:
    """Encodes envelopes for one recipient, whose handled message types are `types`."""

    def __init__(self, types: Mapping[str, type]) -> None:
        self._types = {name: t for name, t in types.items() if issubclass(t, BaseModel)}

    def encode(self, envelope: Envelope) -> str:
        """The envelope as one JSON document; `InvalidMessageError` for a non-model payload."""
        payload = envelope.payload
        if not isinstance(payload, BaseModel):
            raise InvalidMessageError(
                f"a durable mailbox stores pydantic messages only; {envelope.recipient!r} was "
                f"sent a {type(payload).__name__}"
            )
        return json.dumps(
            {
                "format": FORMAT,
                "origin": envelope.origin,
                "seq": envelope.seq,
                "recipient": envelope.recipient,
                "sender": envelope.sender,
                "correlation_id": envelope.correlation_id,
                "reply_to": envelope.reply_to,
                "attempt": envelope.attempt,
                "created_at": envelope.created_at,
                "type": type(payload).__name__,
                "payload": payload.model_dump(mode="json"),
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    def decode(self, body: str | bytes, *, attempt: int | None = None) -> Envelope:
        """The envelope `body` holds; `InvalidMessageError` saying why when it cannot be."""
        try:
            data: dict[str, Any] = json.loads(body)
        except (ValueError, TypeError) as exc:
            raise InvalidMessageError(f"stored envelope is not JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InvalidMessageError(f"stored envelope has no format {FORMAT} header")
        name = data.get("type")
        model = self._types.get(name) if isinstance(name, str) else None
        if model is None:
            raise InvalidMessageError(
                f"stored message type {name!r} is not handled here; "
                f"known: {', '.join(sorted(self._types)) or 'none'}"
            )
        try:
            payload = model.model_validate(data.get("payload"))
            return Envelope(
                str(data["recipient"]),
                payload,
                data.get("sender"),
                correlation_id=data.get("correlation_id"),
                reply_to=data.get("reply_to"),
                attempt=int(data["attempt"] if attempt is None else attempt),
                seq=int(data["seq"]),
                origin=str(data["origin"]),
                created_at=float(data["created_at"]),
            )
        except ValidationError as exc:
            raise InvalidMessageError(f"stored {name} does not validate: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidMessageError(f"stored envelope is missing {exc}") from None
