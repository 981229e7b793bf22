"""redis-py's RedisCluster against `fake-redis-server --cluster 3 --replicas 1`: discover the
nodes, write and read keys on every shard, read from replicas, run a hash-tagged pipeline and a
multi-key command, and publish on a shard channel.

Usage: python cluster_smoke.py <first-node-port>
Run by scripts/peer-tests on the fake-redis-server it tests, with redis-py from the sdist it
tests; exits non-zero on the first failure.
"""

import sys

from redis.cluster import LoadBalancingStrategy, RedisCluster


def main() -> None:
    port = int(sys.argv[1])
    cluster = RedisCluster(host="127.0.0.1", port=port, socket_timeout=5)
    primaries = cluster.get_primaries()
    replicas = cluster.get_replicas()
    assert len(primaries) == 3, f"3 primaries expected: {primaries}"
    assert len(replicas) == 3, f"3 replicas expected: {replicas}"
    ports = sorted(n.port for n in primaries + replicas)
    assert ports == list(range(port, port + 6)), f"the nodes are not on consecutive ports: {ports}"

    # Keys until every primary holds some.
    keys = {}
    i = 0
    while len({cluster.get_node_from_key(k).name for k in keys}) < 3:
        keys[f"smoke:{i}"] = f"value-{i}"
        i += 1
    for key, value in keys.items():
        assert cluster.set(key, value)
    for key, value in keys.items():
        assert cluster.get(key) == value.encode(), key
    for node in primaries:
        assert cluster.dbsize(target_nodes=node) > 0, f"{node.name} holds no key"

    # Reads from replicas (READONLY), once the writes have reached them.
    reader = RedisCluster(
        host="127.0.0.1",
        port=port,
        socket_timeout=5,
        load_balancing_strategy=LoadBalancingStrategy.ROUND_ROBIN_REPLICAS,
    )
    for key, value in keys.items():
        assert reader.get(key) == value.encode(), key
    reader.close()

    # A pipeline and a multi-key command on one hash tag.
    pipe = cluster.pipeline()
    pipe.set("{smoke}:a", "1").set("{smoke}:b", "2").incr("{smoke}:a")
    assert pipe.execute() == [True, True, 2]
    assert cluster.mget("{smoke}:a", "{smoke}:b") == [b"2", b"2"]

    # A shard channel: SPUBLISH counts the subscriber on the channel's shard.
    pubsub = cluster.pubsub()
    pubsub.ssubscribe("smoke:channel")
    assert pubsub.get_sharded_message(timeout=5)["type"] == "ssubscribe"
    assert cluster.spublish("smoke:channel", "hello") == 1
    message = pubsub.get_sharded_message(timeout=5)
    assert message and message["data"] == b"hello", message
    pubsub.close()

    assert cluster.delete(*keys) == len(keys)
    cluster.close()
    print(f"cluster smoke: {len(keys)} keys on 3 shards, ports {ports}", file=sys.stderr)


if __name__ == "__main__":
    main()
