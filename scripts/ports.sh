# Loopback ports for the servers that the scripts start; sourced by each of them.
#
# Ports are drawn below Linux's ephemeral range (32768 and up). An outgoing connection takes its
# local port from that range, and a server cannot bind a port that a connection holds even when
# nothing listens on it: a port in that range can look free to a probe and still fail to bind.
# Below the range only listeners take ports, and a probe sees them. A server can still lose a
# port to another one started between the probe and its bind; `serve_on_free_ports` starts it
# again on other ports when that happens.

# port_is_free <port>: nothing accepts connections on the loopback port.
port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_ports <count> [<also>]: prints a base port with <count> free consecutive loopback ports from
# it; with <also>, each port + <also> is free too (a cluster node's bus listens on port + 10000).
free_ports() {
  local count=${1:-1} also=${2:-0} base i free
  for _ in $(seq 1 100); do
    base=$((12000 + RANDOM % (20000 - also - count)))
    free=1
    for ((i = 0; i < count; i++)); do
      port_is_free $((base + i)) || { free=0; break; }
      if [ "$also" -gt 0 ]; then port_is_free $((base + i + also)) || { free=0; break; }; fi
    done
    [ "$free" = 1 ] && { echo "$base"; return 0; }
  done
  echo "no run of $count free loopback ports found" >&2
  return 1
}

# free_port: one free loopback port.
free_port() { free_ports 1; }

# serve_on_free_ports <count> <log> <command...>: runs `<command...> --port <base>` in the
# background, its output to <log>, on <count> free consecutive ports, and waits until the last of
# them answers PING. Sets served_base and served_pid. A server that exits before it answers (it
# lost a port between the probe and its bind) is started again on other ports, up to 5 times.
serve_on_free_ports() {
  local count=$1 log=$2 last
  shift 2
  for _ in 1 2 3 4 5; do
    served_base=$(free_ports "$count") || return 1
    "$@" --port "$served_base" >"$log" 2>&1 &
    served_pid=$!
    last=$((served_base + count - 1))
    for _ in $(seq 1 150); do
      redis-cli -p "$last" ping 2>/dev/null | grep -q PONG && return 0
      kill -0 "$served_pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$served_pid" 2>/dev/null; then
      echo "nothing answers PING on port $last; the server's output:" >&2
      cat "$log" >&2
      kill "$served_pid" 2>/dev/null || true
      wait "$served_pid" 2>/dev/null || true
      return 1
    fi
    wait "$served_pid" 2>/dev/null || true
    echo "the server on ports $served_base to $last exited; trying other ports:" >&2
    tail -n 3 "$log" >&2
  done
  echo "the server exited on 5 runs of free ports" >&2
  return 1
}
