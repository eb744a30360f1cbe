"""Token usage as the Messages API reports it for one call."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    """The four token counts of one call; all four are needed to size the context."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0
    """The part of `cache_creation_input_tokens` written to live an hour (`"ttl": "1h"`,
    billed 2x input instead of 1.25x); the API's `cache_creation.ephemeral_1h_input_tokens`."""
    compaction_input_tokens: int = 0
    """Input tokens of a server-side compaction this call ran (the `compaction` entry of the
    API's `usage.iterations`), billed on top of the fields above and not part of the
    context; the other three counts of that entry follow."""
    compaction_cache_creation_input_tokens: int = 0
    compaction_cache_read_input_tokens: int = 0
    compaction_output_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        """Size of the context after this call: everything sent plus what came back."""
        return (
            self.input_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
            + self.output_tokens
        )
