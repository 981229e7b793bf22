"""redis-py's Sentinel against `fake-redis-server --replicas 1`: find the primary, write, fail over
through the sentinel, and find the new primary with what was written.

Usage: python sentinel_smoke.py <sentinel-port> [<master-name>]
Run by scripts/peer-tests on the fake-redis-server it tests, with redis-py from the sdist it
tests; exits non-zero on the first failure.
"""

import sys

from redis import Redis
from redis.exceptions import ReadOnlyError
from redis.sentinel import Sentinel


def main() -> None:
    port = int(sys.argv[1])
    name = sys.argv[2] if len(sys.argv) > 2 else "mymaster"
    sentinel = Sentinel([("127.0.0.1", port)], socket_timeout=5)
    old = sentinel.discover_master(name)
    replicas = sentinel.discover_slaves(name)
    assert replicas, "the sentinel names no replica"
    primary = sentinel.master_for(name, socket_timeout=5)
    primary.set("smoke:orders", "held")
    assert sentinel.slave_for(name, socket_timeout=5).ping()

    direct = sentinel.sentinels[0]
    assert direct.sentinel_failover(name)
    new = sentinel.discover_master(name)
    assert new != old, f"the primary did not move: {old} -> {new}"
    assert new in replicas, f"{new} was not a replica ({replicas})"
    # The old primary now follows the new one and refuses writes; master_for finds the new one.
    try:
        Redis(host=old[0], port=old[1], socket_timeout=5).set("smoke:orders", "again")
        raise AssertionError("the old primary took a write after the failover")
    except ReadOnlyError:
        pass
    promoted = sentinel.master_for(name, socket_timeout=5)
    assert promoted.get("smoke:orders") == b"held"
    promoted.set("smoke:orders", "again")
    print(f"sentinel smoke: primary {old} -> {new}, data kept", file=sys.stderr)


if __name__ == "__main__":
    main()
