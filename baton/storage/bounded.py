"""Reading an input from the store with a size limit, judged before a byte is fetched, as
`baton/_regular_files.py` judges a file by its `stat`: a scenario's script, recording or
prompt in the store is held whole in memory once read (docs/storage.md, "A worker's own
directory").
"""

from __future__ import annotations

from baton.storage.errors import ObjectNotFoundError
from baton.storage.protocol import Storage


async def read_bounded(storage: Storage, path: str, limit: int) -> bytes | None:
    """The object at `path`, or None when there is none; `ValueError` saying why it is
    refused (`is N bytes, over the L byte limit`) when it is larger than `limit`."""
    info = await storage.stat(path)
    if info is None:
        return None
    if info.size > limit:
        raise ValueError(f"is {info.size} bytes, over the {limit} byte limit")
    try:
        data = await storage.read(path)
    except ObjectNotFoundError:
        return None  # deleted since the stat: no object, as if it had never been there
    if len(data) > limit:  # replaced by a larger one since the stat
        raise ValueError(f"is {len(data)} bytes, over the {limit} byte limit")
    return data
