"""The Redis client of the distributed backend: one server, or a Redis Cluster.

`connect` opens whichever a `redis://` URL names. A server whose `INFO cluster` says
`cluster_enabled:1` is a node of a cluster: the client is then a `RedisCluster`, which learns
the other nodes from it and sends each command (a blocking XREADGROUP too) to the node that
owns its key. On a cluster every command or script touching several keys must find them in
one hash slot, and `slot_tag` is how all the keys of one actor get there (README.md,
"Scaling out").
"""

from __future__ import annotations

from typing import TypeAlias

from redis.asyncio import Redis, RedisCluster
from redis.exceptions import NoPermissionError, ResponseError

from baton.errors import ConfigError

RedisClient: TypeAlias = Redis | RedisCluster
"""What the Redis mailbox, the Redis journal and the distributed runtime talk through."""


def slot_tag(name: str) -> str:
    """`{name}`, the hash tag of an actor's keys: a cluster hashes only what the first braces
    of a key enclose, so every key carrying the tag lands in the same slot, and a script may
    touch them together. A single server ignores the braces."""
    return "{" + name + "}"


async def connect(url: str, *, socket_timeout: float) -> RedisClient:
    """A client of the server `url` names, or of the cluster that server is a node of.

    Raises what redis-py raises when nothing answers there; `ConfigError` when the URL names
    a database other than 0 of a cluster (a cluster has only database 0)."""
    probe = Redis.from_url(url, socket_timeout=socket_timeout)
    try:
        info = await probe.info("cluster")
    except NoPermissionError:
        # An ACL that denies INFO: take it for the single server baton always supported.
        return probe
    except ResponseError as exc:
        await probe.aclose()
        # The connection's SELECT is what a cluster node refuses ("not allowed in cluster mode").
        if "cluster mode" not in str(exc):
            raise
        raise ConfigError(
            "runtime.mailbox names a database other than 0 of a Redis Cluster, which has only "
            "database 0: write redis://HOST:PORT/0"
        ) from None
    except BaseException:
        await probe.aclose()
        raise
    if not info.get("cluster_enabled"):
        return probe
    await probe.aclose()
    cluster = RedisCluster.from_url(url, socket_timeout=socket_timeout)
    try:
        await cluster.initialize()
    except BaseException:
        await cluster.aclose()
        raise
    return cluster
