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

    @property
    def context_tokens(self) -> int:
        """Size of the context after this call: everything sent plus what came back."""
        return (
            self.input_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
            + self.output_tokens
        )
