"""`ObjectStorage`: objects in an S3-compatible bucket under a prefix (AWS S3, GCS's S3 API,
MinIO, SeaweedFS, Ceph), through obstore, the optional `s3` extra (docs/storage.md,
"S3-compatible").

The endpoint and the credentials are the standard AWS variables (`AWS_ENDPOINT_URL`,
`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`); an
`http://` endpoint is allowed. A PUT is atomic per object, so a write is whole or absent.

obstore's blocking calls run on worker threads rather than its asyncio ones: those complete
their futures from its own threads, and one still doing so when a short command such as
`baton pull` exits aborts the process (docs/storage.md, "Why obstore, and how it is called").
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

import anyio
import obstore
from obstore.exceptions import BaseError
from obstore.store import S3Store

from baton.storage.errors import ObjectNotFoundError, StorageFailure
from baton.storage.keys import check_key, check_prefix, is_key
from baton.storage.protocol import Listing, ObjectInfo

if TYPE_CHECKING:
    from obstore.store import ClientConfig, RetryConfig, S3Config

T = TypeVar("T")

# A request that fails to connect or gets a 5xx is tried again, but a store that does not
# answer is reported within seconds, not after obstore's default three minutes.
RETRY: RetryConfig = {"max_retries": 3, "retry_timeout": timedelta(seconds=20)}
CONNECT_TIMEOUT = "5s"
REQUEST_TIMEOUT = "120s"
_VARIABLES = {
    "access_key_id": "AWS_ACCESS_KEY_ID",
    "secret_access_key": "AWS_SECRET_ACCESS_KEY",
    "session_token": "AWS_SESSION_TOKEN",
    "region": "AWS_REGION",
}
_CODE = re.compile(r"<Code>(\w+)</Code>")
_STATUS = re.compile(r"status code: (\d{3}[ A-Za-z]*)")
_CREDENTIALS = "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"


def endpoint_of(environ: Mapping[str, str]) -> str | None:
    """The S3 endpoint the AWS variables name (`AWS_ENDPOINT_URL_S3` first), or None: AWS."""
    return environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL") or None


class ObjectStorage:
    """The objects under `prefix` (`""`: the whole bucket) in `bucket`."""

    def __init__(
        self, bucket: str, prefix: str = "", *, environ: Mapping[str, str] | None = None
    ) -> None:
        environ = os.environ if environ is None else environ
        self.bucket = bucket
        self.prefix = check_prefix(prefix)
        self.endpoint = endpoint_of(environ)
        config: S3Config = {}
        for key, variable in _VARIABLES.items():
            if environ.get(variable):
                config[key] = environ[variable]  # type: ignore[literal-required]
        if self.endpoint is not None:
            config["endpoint"] = self.endpoint
        client: ClientConfig = {
            "connect_timeout": CONNECT_TIMEOUT,
            "timeout": REQUEST_TIMEOUT,
            "allow_http": (self.endpoint or "").startswith("http://"),
        }
        self._store = S3Store(
            bucket,
            prefix=self.prefix or None,
            config=config,
            client_options=client,
            retry_config=RETRY,
        )

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def __repr__(self) -> str:
        return f"ObjectStorage({self.url!r})"

    # --- the protocol ------------------------------------------------------------------------

    async def read(self, path: str) -> bytes:
        check_key(path)
        try:
            found = await self._call(f"read {path!r}", obstore.get, self._store, path)
            return bytes(await self._call(f"read {path!r}", found.bytes))
        except FileNotFoundError:
            raise ObjectNotFoundError(path, self.url) from None

    async def write(self, path: str, data: bytes) -> None:
        check_key(path)
        # One PUT, never a multipart upload: the object appears whole when it returns, and
        # a write that fails leaves no unfinished upload behind to pay for.
        put = functools.partial(obstore.put, self._store, path, bytes(data), use_multipart=False)
        await self._call(f"write {path!r}", put)

    async def list(self, prefix: str = "", *, recursive: bool = True) -> Listing:
        folder = check_prefix(prefix)
        cut = len(folder) + 1 if folder else 0
        doing = f"list {folder!r}" if folder else "list its objects"
        if recursive:
            found = await self._call(doing, lambda: obstore.list(self._store, folder).collect())
            objects = [ObjectInfo(meta["path"][cut:], meta["size"]) for meta in found]
            folders: list[str] = []
        else:
            level = await self._call(doing, obstore.list_with_delimiter, self._store, folder)
            objects = [ObjectInfo(meta["path"][cut:], meta["size"]) for meta in level["objects"]]
            folders = [name[cut:] for name in level["common_prefixes"]]
        # Another writer may have stored a name no key can spell (`a/../b`): not listed.
        return Listing(
            tuple(sorted((o for o in objects if is_key(o.path)), key=lambda o: o.path)),
            tuple(sorted(name for name in folders if is_key(name))),
        )

    async def stat(self, path: str) -> ObjectInfo | None:
        check_key(path)
        try:
            meta = await self._call(f"look at {path!r}", obstore.head, self._store, path)
        except FileNotFoundError:
            return None
        return ObjectInfo(path, meta["size"])

    async def exists(self, path: str) -> bool:
        return await self.stat(path) is not None

    async def delete(self, path: str) -> None:
        check_key(path)
        await self._call(f"delete {path!r}", obstore.delete, self._store, path)

    async def check(self) -> None:
        # One listing request: it proves the endpoint, the credentials and the bucket, where
        # a HEAD would answer 404 alike for a missing object and a missing bucket.
        def first_page() -> None:
            next(iter(obstore.list(self._store, chunk_size=1)), None)

        await self._call("be reached", first_page)

    # --- obstore's errors -----------------------------------------------------------------------

    async def _call(self, doing: str, function: Callable[..., T], *args: object) -> T:
        """`function(*args)` on a worker thread; obstore's errors as `StorageFailure`, but a
        missing object as the `FileNotFoundError` it is."""
        try:
            return await anyio.to_thread.run_sync(functools.partial(function, *args))
        except FileNotFoundError:
            raise
        except (BaseError, OSError, ValueError) as error:
            raise self._failure(doing, error) from error

    def _failure(self, doing: str, error: Exception) -> StorageFailure:
        text = str(error)
        code = _CODE.search(text)
        status = _STATUS.search(text)
        if code is not None or status is not None:
            what = " ".join(found.group(1).strip() for found in (status, code) if found is not None)
        else:
            what = text.splitlines()[0].rsplit(" - ", 1)[-1].strip() if text else repr(error)
        return StorageFailure(f"storage {self.url} cannot {doing}: {what} — {self._hint(text)}")

    def _hint(self, text: str) -> str:
        where = self.endpoint or "AWS S3"
        if "NoSuchBucket" in text:
            return f"check that bucket {self.bucket!r} exists at {where} (AWS_ENDPOINT_URL)"
        if "status code: 403" in text or "status code: 401" in text:
            return f"check {_CREDENTIALS} (and the clock: S3 refuses skewed signatures)"
        if "status code:" not in text:
            return f"nothing answered: check AWS_ENDPOINT_URL ({where}) and the network"
        return f"check AWS_ENDPOINT_URL ({where}), {_CREDENTIALS} and AWS_REGION"
