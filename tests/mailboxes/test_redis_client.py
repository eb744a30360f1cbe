"""The Redis client of the distributed backend: a URL naming a Redis Cluster node opens the
whole cluster, and every key of one actor's mailbox lands in one hash slot, while actors
spread over the cluster's nodes."""

from __future__ import annotations

from collections import defaultdict

import anyio
import pytest
from redis.asyncio import Redis, RedisCluster

from baton.errors import ConfigError
from baton.mailboxes.redis import RedisMailbox
from baton.mailboxes.redis_client import connect
from tests.mailboxes.backends import CODEC, ping
from tests.mailboxes.sinks import Sink

ACTORS = [f"actor-{n}" for n in range(12)] + ["init", "execute", "scheduler", "a.b:c"]


async def test_a_cluster_node_opens_the_whole_cluster(
    redis_cluster_url: str, redis_url: str
) -> None:
    """connect() to one node of a cluster gives a cluster client that knows the three
    primaries; to a single server, a plain client of it."""
    cluster = await connect(redis_cluster_url, socket_timeout=5)
    single = await connect(redis_url, socket_timeout=5)
    try:
        assert isinstance(cluster, RedisCluster)
        assert 3 == len(cluster.get_primaries())
        assert isinstance(single, Redis)
        assert {"cluster_enabled": 0} == await single.info("cluster")
    finally:
        await cluster.aclose()
        await single.aclose()


async def test_a_database_other_than_0_of_a_cluster_is_refused(redis_cluster_url: str) -> None:
    """A cluster has only database 0: a URL naming another is a ConfigError saying so."""
    with pytest.raises(ConfigError, match=r"only database 0: write redis://HOST:PORT/0"):
        await connect(redis_cluster_url.removesuffix("/0") + "/1", socket_timeout=5)


async def test_an_actors_keys_share_one_slot_and_actors_spread_over_the_nodes(
    redis_cluster_client: RedisCluster,
) -> None:
    """Sending, receiving and dead-lettering on many actors' mailboxes over a cluster works
    (each script touches one slot), each actor's stream, dead letters and dedupe markers
    share one slot, and the actors' slots lie on all three primaries."""
    client = redis_cluster_client
    sink = Sink()
    for name in ACTORS:
        box = RedisMailbox(
            name, client=client, codec=CODEC, capacity=8, dead_letters=sink, consumer="w"
        )
        await box.send(ping(1))
        with anyio.fail_after(5):
            delivery = await box.receive()
        await box.nack(delivery, requeue=False, reason="kept as a dead letter")
        box.drain_nowait()
    slots: dict[str, set[int]] = defaultdict(set)
    kinds: dict[str, set[str]] = defaultdict(set)
    for raw in await client.keys(target_nodes=RedisCluster.PRIMARIES):
        key = raw.decode()
        actor = key[key.index("{") + 1 : key.index("}")]
        slots[actor].add(client.keyslot(key))
        kinds[actor].add(key.split(":")[1])
    assert dict.fromkeys(ACTORS, 1) == {name: len(found) for name, found in slots.items()}
    assert {name: {"mailbox", "dead", "seen"} for name in ACTORS} == dict(kinds)
    assert len(ACTORS) == len(sink.letters)
    nodes = {client.get_node_from_key(f"baton:mailbox:{{{name}}}").name for name in ACTORS}
    assert 3 == len(nodes)
