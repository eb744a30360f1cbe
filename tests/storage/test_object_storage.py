"""`ObjectStorage` beyond the contract, on a real SeaweedFS: where keys land in the bucket, and
what a store that cannot be used says (docs/storage.md, "S3-compatible")."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from baton.storage import Listing, ObjectInfo, ObjectStorage, open_storage
from baton.storage.errors import StorageFailure


async def test_objects_land_under_the_prefix_in_the_bucket(s3_url: str, tmp_path: Path) -> None:
    """Keys land under `PREFIX/` in the bucket; another prefix of it sees none of them."""
    bucket = s3_url.removesuffix("/baton")
    await open_storage(s3_url, tmp_path).write("scenarios/demo/design.md", b"design")
    whole = await open_storage(bucket, tmp_path).list()
    other = await open_storage(f"{bucket}/other", tmp_path).list()
    assert (Listing((ObjectInfo("baton/scenarios/demo/design.md", 6),)), Listing()) == (
        whole,
        other,
    )


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"bucket": "baton-missing"}, "404 Not Found NoSuchBucket — check that bucket"),
        (
            {"AWS_SECRET_ACCESS_KEY": "wrong"},
            "403 Forbidden SignatureDoesNotMatch — check AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY",
        ),
        (
            {"AWS_ACCESS_KEY_ID": "nobody"},
            "403 Forbidden InvalidAccessKeyId — check AWS_ACCESS_KEY_ID",
        ),
        ({"AWS_ENDPOINT_URL": "closed"}, "nothing answered: check AWS_ENDPOINT_URL"),
    ],
    ids=["no-bucket", "wrong-secret", "unknown-key", "no-server"],
)
async def test_a_store_that_cannot_be_used_fails_its_check_in_one_line(
    s3_url: str, change: dict[str, str], says: str
) -> None:
    """No bucket, refused credentials, no server: `check` fails in one line saying what to check."""
    environ = {**os.environ, **change}
    bucket = environ.pop("bucket", s3_url.removeprefix("s3://").split("/")[0])
    if environ["AWS_ENDPOINT_URL"] == "closed":
        environ["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{_closed_port()}"
    storage = ObjectStorage(bucket, "baton", environ=environ)
    with pytest.raises(StorageFailure) as caught:
        await storage.check()
    message = str(caught.value)
    assert (True, True, 1) == (
        message.startswith(f"storage s3://{bucket}/baton cannot be reached: "),
        says in message,
        len(message.splitlines()),
    ), message
