#!/usr/bin/env python3
"""Captures the tables fake-redis serves from a real server into a folder of `fake-redis/data/`
(one per version the fake imitates: `redis-7.0/`, `redis-7.4/`, `valkey-9.1/`): `COMMAND` and
`COMMAND DOCS`, as the RESP3 bytes a redis-server answers, and `config.tsv`, one line per
parameter of `CONFIG GET *`: its name, its default, and what `CONFIG SET` answers for a value
that is not a number (`x-bogus`) and for one below every range (`-9223372036854775807`), which
tells the parameter's type and range.

It starts a fresh server of its own (so every parameter has its default, nothing shared is
touched) on a free port with persistence off, asks, and stops it:

    fake-redis/scripts/capture-redis-tables.py path/to/redis-server fake-redis/data/redis-7.4

(with no arguments: the `redis-server` on the PATH, into `data/redis-7.0/`). A Valkey server
takes the same flags. The fake parses the files once, at first use. Run it again, into the
version's folder, when the release a version imitates (`engine/version.rs`) changes.
"""

import os
import socket
import subprocess
import sys
import time

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "redis-7.0")


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


def bulks(frame):
    """The bulk strings of a RESP2 array, in order."""
    out, rest = [], frame.split(b"\r\n", 1)[1]
    while rest:
        head, rest = rest.split(b"\r\n", 1)
        n = int(head[1:])
        out.append(rest[:n].decode())
        rest = rest[n + 2 :]
    return out


def answer(frame):
    """A status or error reply as text."""
    return frame.decode().strip()[1:]


def config_table(sock, buf):
    flat = bulks(command(sock, buf, "CONFIG", "GET", "*"))
    lines = []
    for name, default in zip(flat[0::2], flat[1::2]):
        probes = []
        for value in ["x-bogus", "-9223372036854775807"]:
            if name == "requirepass":
                probes.append("OK")
                continue
            reply = answer(command(sock, buf, "CONFIG", "SET", name, value))
            probes.append(reply)
            if reply == "OK":
                command(sock, buf, "CONFIG", "SET", name, default)
        if name == "port":
            default = "6379"  # Redis's default, not the free port this server was given
        fields = [name, default] + probes
        assert not any("\t" in x or "\n" in x for x in fields), fields
        lines.append("\t".join(fields) + "\n")
    return "".join(lines)


def main():
    server = sys.argv[1] if len(sys.argv) > 1 else "redis-server"
    out = sys.argv[2] if len(sys.argv) > 2 else DATA
    os.makedirs(out, exist_ok=True)
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        # `dir` is the server's working directory: one that says nothing of this machine.
        cwd="/",
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
        ]:
            with open(os.path.join(out, name), "wb") as f:
                f.write(command(sock, buf, *args))
        command(sock, buf, "HELLO", "2")
        with open(os.path.join(out, "config.tsv"), "w") as f:
            f.write(config_table(sock, buf))
        sock.sendall(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
    finally:
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
