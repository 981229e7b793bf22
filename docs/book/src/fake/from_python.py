"""The book's Python snippet (chapter "Testing your code on the fake"), run by scripts/peer-tests
against fake-redis-server --clock virtual, whose port it takes from FAKE_PORT."""

import os

# ANCHOR: snippet
import redis

r = redis.Redis(port=int(os.environ.get("FAKE_PORT", "7379")))
r.set("session", "alice", ex=30)
r.execute_command("FAKE.ADVANCE", 31_000)
assert r.exists("session") == 0

r.execute_command("FAKE.FAULT", "DROP-REPLY", "*", "NEXT", "1")
r.incr("visits")  # the reply is lost; redis-py reconnects and sends INCR again
assert r.get("visits") == b"2"  # so one call counted twice
# ANCHOR_END: snippet
