"""Storage: the workspace's files behind one small interface, a local folder by default or
an S3-compatible bucket (docs/storage.md).

Every name is imported on first use (docs/architecture.md, "What a command imports"), and
the S3 client, obstore (the `s3` extra), only with `ObjectStorage`, for an `s3://` url: a
workspace on its own folder never loads it."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports

if TYPE_CHECKING:
    from baton.storage.config import StorageConfig
    from baton.storage.keys import check_key, check_prefix, is_key
    from baton.storage.local import LocalStorage
    from baton.storage.object_storage import ObjectStorage
    from baton.storage.protocol import Listing, ObjectInfo, Storage
    from baton.storage.url import BucketUrl, check_storage_url, open_storage, parse_storage_url

__getattr__ = lazy_exports(
    __name__,
    {
        "StorageConfig": "baton.storage.config",
        "check_key": "baton.storage.keys",
        "check_prefix": "baton.storage.keys",
        "is_key": "baton.storage.keys",
        "LocalStorage": "baton.storage.local",
        "ObjectStorage": "baton.storage.object_storage",
        "Listing": "baton.storage.protocol",
        "ObjectInfo": "baton.storage.protocol",
        "Storage": "baton.storage.protocol",
        "BucketUrl": "baton.storage.url",
        "check_storage_url": "baton.storage.url",
        "open_storage": "baton.storage.url",
        "parse_storage_url": "baton.storage.url",
    },
)

__all__ = [
    "BucketUrl",
    "Listing",
    "LocalStorage",
    "ObjectInfo",
    "ObjectStorage",
    "Storage",
    "StorageConfig",
    "check_key",
    "check_prefix",
    "check_storage_url",
    "is_key",
    "open_storage",
    "parse_storage_url",
]
