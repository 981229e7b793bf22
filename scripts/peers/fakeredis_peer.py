"""fakeredis for scripts/bench-peers, which runs this file with the fakeredis it installs in a
virtual environment of its cache: served on a loopback port ("serve", fakeredis's TcpFakeServer),
or driven in this process through its own client, as a Python test uses it ("inprocess"), with
the op mix the script runs on every in-process fake (fake-redis/examples/peer_mix.rs has the same
mix, keys and draws)."""

import argparse
import signal
import sys
import threading
import time

import fakeredis

MASK = (1 << 64) - 1


class Draws:
    """SplitMix64: the random key numbers, the same sequence on every run."""

    def __init__(self, seed):
        self.state = seed

    def next(self, below):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return (z ^ (z >> 31)) % below


def command(op, r, sha):
    if op == "SET":
        return ("SET", f"key:{r}", "xxx")
    if op == "GET":
        return ("GET", f"key:{r}")
    if op == "INCR":
        return ("INCR", f"counter:{r}")
    if op == "LPUSH":
        return ("LPUSH", "mylist", "xxx")
    if op == "HSET":
        return ("HSET", "myhash", f"element:{r}", "xxx")
    return ("EVALSHA", sha, 2, f"lock:{r}", f"latch:{r}", 30000, "owner", 10000)


def serve(port):
    server = fakeredis.TcpFakeServer(("127.0.0.1", port), server_version=(7, 0))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stop.wait()
    server.shutdown()
    server.server_close()


def inprocess(script, seconds, keyspace):
    with open(script, "rb") as f:
        body = f.read()
    client = fakeredis.FakeRedis(version=(7, 0))
    sha = client.script_load(body)
    draws = Draws(1)
    for op in ("SET", "GET", "INCR", "LPUSH", "HSET", "EVALSHA"):
        started = time.perf_counter()
        done = 0
        while time.perf_counter() - started < seconds:
            for _ in range(100):
                client.execute_command(*command(op, draws.next(keyspace), sha))
            done += 100
        print(f"{op} {done / (time.perf_counter() - started):.0f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["serve", "inprocess"])
    parser.add_argument("--port", type=int)
    parser.add_argument("--script")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--keyspace", type=int, default=100000)
    args = parser.parse_args()
    if args.mode == "serve":
        serve(args.port)
    else:
        inprocess(args.script, args.seconds, args.keyspace)


if __name__ == "__main__":
    sys.exit(main())
