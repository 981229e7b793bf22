#!/usr/bin/env python3
"""Captures the tables fake-redis serves from Redis itself: `COMMAND`, `COMMAND DOCS` and
`CONFIG GET *`, each as the RESP3 bytes a redis-server answers, into `fake-redis/data/`.

It starts a fresh redis-server of its own (so every parameter has its default, nothing shared is
touched) on a free port with persistence off, asks, and stops it:

    fake-redis/scripts/capture-redis-tables.py [path/to/redis-server]

The fake parses the files once, at first use. Run it again with the Redis version the fake claims
(`REDIS_VERSION` in `engine/mod.rs`) when that changes.
"""

import os
import socket
import subprocess
import sys
import time

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_line(sock, buf):
    while b"\r\n" not in buf[0]:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise EOFError("the server closed the connection")
        buf[0] += chunk
    line, buf[0] = buf[0].split(b"\r\n", 1)
    return line


def read_exact(sock, buf, n):
    while len(buf[0]) < n:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise EOFError("the server closed the connection")
        buf[0] += chunk
    data, buf[0] = buf[0][:n], buf[0][n:]
    return data


def read_frame(sock, buf):
    """One RESP3 frame's raw bytes."""
    line = read_line(sock, buf)
    kind, rest = line[:1], line[1:]
    out = line + b"\r\n"
    if kind in b"$=!" and rest != b"-1":
        out += read_exact(sock, buf, int(rest) + 2)
    elif kind in b"*~>" and rest != b"-1":
        for _ in range(int(rest)):
            out += read_frame(sock, buf)
    elif kind == b"%" or kind == b"|":
        for _ in range(2 * int(rest)):
            out += read_frame(sock, buf)
    return out


def command(sock, buf, *args):
    req = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        req += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(req)
    return read_frame(sock, buf)


def main():
    server = sys.argv[1] if len(sys.argv) > 1 else "redis-server"
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                sock = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        buf = [b""]
        command(sock, buf, "HELLO", "3")
        version = command(sock, buf, "INFO", "server")
        print(version.split(b"redis_version:")[1].split(b"\r\n")[0].decode(), file=sys.stderr)
        for name, args in [
            ("command.resp", ["COMMAND"]),
            ("command-docs.resp", ["COMMAND", "DOCS"]),
            ("config.resp", ["CONFIG", "GET", "*"]),
        ]:
            with open(os.path.join(DATA, name), "wb") as f:
                f.write(command(sock, buf, *args))
        sock.sendall(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
    finally:
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
