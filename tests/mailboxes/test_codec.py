"""EnvelopeCodec: what a durable mailbox stores, and the reasons it refuses."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from baton.mailboxes import Envelope
from baton.mailboxes.codec import EnvelopeCodec
from baton.mailboxes.errors import InvalidMessageError


class Ping(BaseModel):
    n: int


CODEC = EnvelopeCodec({"Ping": Ping})


def test_the_codec_refuses_what_it_cannot_store_or_read() -> None:
    """A non-model payload, a body that does not validate and one that is not JSON are each
    refused with the reason."""
    with pytest.raises(InvalidMessageError, match="pydantic messages only"):
        CODEC.encode(Envelope("box", {"n": 1}))
    with pytest.raises(InvalidMessageError, match="does not validate"):
        CODEC.decode(CODEC.encode(Envelope("box", Ping(n=1))).replace('"n":1', '"n":"one"'))
    with pytest.raises(InvalidMessageError, match="not JSON"):
        CODEC.decode("{")
