"""The keys a single Redis server kept before they carried the actor's hash tag, renamed.

Before hash tags (which Redis Cluster needs: README.md, "Scaling out"), an actor's keys were
`<prefix>:mailbox:<actor>`, `<prefix>:dead:<actor>`, `<prefix>:journals:<actor>` and
`<prefix>:journal:<actor>:<conversation>`; now the actor appears in them as `{<actor>}`
(`baton.mailboxes.redis_client.slot_tag`). A process opening a single server renames the old
keys of every actor in the registry, so the messages waiting and the journals written before
an upgrade carry on under the new names. RENAMENX keeps a stream's consumer groups and
pending entries and never overwrites: a key that already exists under its new name (written
since, by a process of the new version while one of the old version still ran) is left
under both names and reported. Leases and dedupe markers are not renamed: they expire by
themselves. A cluster never held the old layout (its scripts could not run there).
"""

from __future__ import annotations

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from baton._log import get_logger
from baton.mailboxes.redis_client import slot_tag

log = get_logger(__name__)

_ACTOR_KEYS = ("mailbox", "dead", "journals")


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def rename_untagged_keys(client: Redis, prefix: str) -> int:
    """Rename every registered actor's keys of the old layout; how many were renamed.

    Two round trips, and a third per start only while old keys remain; safe to run from
    several processes at once (a key another one renamed first is simply gone)."""
    actors = sorted(_text(name) for name in await client.hkeys(f"{prefix}:actors"))
    if not actors:
        return 0
    async with client.pipeline(transaction=False) as pipe:
        for actor in actors:
            pipe.smembers(f"{prefix}:journals:{actor}")
        journal_sets = await pipe.execute()
    moves: list[tuple[str, str]] = []
    # The journals before the set that names them: a start interrupted halfway finds the set
    # still under its old name, and the rest of its journals with it, next time.
    for actor, conversations in zip(actors, journal_sets, strict=True):
        old, new = f"{prefix}:journal:{actor}:", f"{prefix}:journal:{slot_tag(actor)}:"
        moves += [(old + c, new + c) for c in sorted(_text(m) for m in conversations)]
    for actor in actors:
        moves += [(f"{prefix}:{k}:{actor}", f"{prefix}:{k}:{slot_tag(actor)}") for k in _ACTOR_KEYS]
    async with client.pipeline(transaction=False) as pipe:
        for old, new in moves:
            pipe.renamenx(old, new)
        results = await pipe.execute(raise_on_error=False)
    renamed = 0
    for (old, new), result in zip(moves, results, strict=True):
        if isinstance(result, ResponseError):
            continue  # no such key: nothing to rename, or another process renamed it first
        if result:
            renamed += 1
        else:
            log.warning("redis.key_not_renamed", key=old, new_key=new, reason="new key exists")
    if renamed:
        log.info("redis.keys_renamed", keys=renamed, prefix=prefix)
    return renamed
