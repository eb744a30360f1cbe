"""Which store a `[storage] url` names, and opening it: empty for the workspace folder
(`LocalStorage`), `s3://BUCKET[/PREFIX]` for an S3-compatible bucket (`ObjectStorage`;
docs/storage.md, "The url")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from baton.errors import ConfigError
from baton.storage.errors import StoragePathError
from baton.storage.keys import check_prefix
from baton.storage.local import LocalStorage
from baton.storage.protocol import Storage

S3_SCHEME = "s3"
# S3's rules (3 to 63 lowercase letters, digits, dots and hyphens, a letter or digit at each
# end) and the underscore GCS also takes.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")
_EXAMPLE = "write s3://BUCKET or s3://BUCKET/PREFIX, e.g. s3://my-bucket/baton, or leave it empty"


@dataclass(frozen=True, slots=True)
class BucketUrl:
    """An `s3://` url taken apart: the bucket, and the prefix the objects' keys go under."""

    bucket: str
    prefix: str


def parse_storage_url(url: str | None) -> BucketUrl | None:
    """The bucket and prefix `url` names, or None for the workspace (`None` or empty);
    `ValueError` saying how to write it when it is neither."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme != S3_SCHEME:
        raise ValueError(f"{url!r} is not an S3 url: {_EXAMPLE} for the workspace folder")
    if parts.query or parts.fragment or "@" in parts.netloc or ":" in parts.netloc:
        raise ValueError(f"{url!r} has more than a bucket and a prefix: {_EXAMPLE}")
    if not _BUCKET.match(parts.netloc):
        raise ValueError(
            f"{url!r}: {parts.netloc!r} is not a bucket name (3 to 63 lowercase letters, "
            "digits, '.', '-' or '_', a letter or digit at each end)"
        )
    try:
        prefix = check_prefix(parts.path.removeprefix("/"))
    except StoragePathError as exc:
        raise ValueError(f"{url!r}: the prefix {exc.problem}") from None
    return BucketUrl(parts.netloc, prefix)


def check_storage_url(url: str) -> str:
    """`url` itself when it names a store (empty: the workspace); `ValueError` otherwise."""
    parse_storage_url(url)
    return url


def open_storage(
    url: str | None, workspace: Path, environ: Mapping[str, str] | None = None
) -> Storage:
    """The store `url` names: the `workspace` folder when it is empty, else the bucket's
    prefix, reached through the AWS variables of `environ` (default: the process's).
    `ConfigError` for a url that names neither, or an `s3://` one without the `s3` extra."""
    try:
        bucket = parse_storage_url(url)
    except ValueError as exc:
        raise ConfigError(f"storage.url {exc}") from None
    if bucket is None:
        return LocalStorage(workspace)
    try:
        # Imported here: obstore is the optional `s3` extra, and a workspace on its own
        # folder needs none of it.
        from baton.storage.object_storage import ObjectStorage  # noqa: PLC0415
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] != "obstore":
            raise
        raise ConfigError(
            f"storage {url} needs the S3 client, which is not installed: pip install 'baton[s3]'"
        ) from None
    return ObjectStorage(bucket.bucket, bucket.prefix, environ=environ)
