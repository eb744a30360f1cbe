"""`[storage]` of `baton.toml`: where the workspace's files are kept (docs/storage.md,
"The url"). `BATON_STORAGE__URL` and `--storage` on `baton run`, `baton worker` and
`baton pull` override it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from baton.storage.url import check_storage_url


class StorageConfig(BaseModel):
    """The `[storage]` table: `url` empty (the workspace folder) or `s3://BUCKET[/PREFIX]`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(
        "",
        description="where the workspace's files are kept: empty for the workspace folder, "
        "or s3://BUCKET[/PREFIX] for an S3-compatible bucket (endpoint and credentials from "
        "the AWS_* variables)",
    )

    @field_validator("url")
    @classmethod
    def _known_store(cls, value: str) -> str:
        return check_storage_url(value)
