# Replicated Redis topologies on loopback, for the tests of the lock's Cluster and Sentinel backends.
#
# Sourced by scripts/test (and usable by hand: `source scripts/topology.sh; topology_start; ...`).
# Everything runs under one scratch folder, with no persistence, and every process is stopped by
# `topology_stop` (scripts/test calls it on every exit path).
#
#   topology_start_cluster   a Redis Cluster of 3 primaries with one replica each;
#                            exports REDIS_CLUSTER_URLS (comma-separated node URLs)
#   topology_start_sentinel  a primary with one replica, watched by 3 sentinels (quorum 2);
#                            exports REDIS_SENTINEL_URLS and REDIS_SENTINEL_MASTER
#
# Tests that fail over or stop a node use slots and keys of their own and restore the topology
# before they end; nothing here is ever flushed by a test.

topology_dir=""
topology_pids=()

# shellcheck source=scripts/ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

# A free port whose cluster bus port (+10000) is free too.
topology_free_port() { free_ports 1 10000; }

topology_wait_ping() {
  local port=$1
  for _ in $(seq 1 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "redis on port $port did not start" >&2
  return 1
}

# topology_redis <name> <port> [redis-server options...]
topology_redis() {
  local name=$1 port=$2
  shift 2
  mkdir -p "$topology_dir/$name"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --pidfile "$topology_dir/$name/pid" --dir "$topology_dir/$name" \
    --logfile "$topology_dir/$name/log" "$@"
  topology_wait_ping "$port"
  topology_pids+=("$(cat "$topology_dir/$name/pid")")
}

topology_init() {
  if [ -z "$topology_dir" ]; then
    topology_dir=$(mktemp -d)
  fi
}

topology_start_cluster() {
  topology_init
  local ports=() port urls=""
  for i in 1 2 3 4 5 6; do
    port=$(topology_free_port)
    topology_redis "cluster-$i" "$port" --cluster-enabled yes \
      --cluster-config-file "$topology_dir/cluster-$i/nodes.conf" --cluster-node-timeout 5000
    ports+=("$port")
  done
  local addrs=()
  for port in "${ports[@]}"; do addrs+=("127.0.0.1:$port"); done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
    >"$topology_dir/cluster-create.log" 2>&1 || {
    cat "$topology_dir/cluster-create.log" >&2
    return 1
  }
  # Ready when every node agrees that all 16,384 slots are served.
  for port in "${ports[@]}"; do
    for _ in $(seq 1 200); do
      redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && break
      sleep 0.1
    done
    redis-cli -p "$port" cluster info | grep -q '^cluster_state:ok' || {
      echo "cluster node on port $port never reached cluster_state:ok" >&2
      return 1
    }
  done
  # And when every replica has finished its first sync: until then a write's WAIT finds no
  # replica, and the lock's replica check refuses the grant.
  for port in "${ports[@]}"; do
    for _ in $(seq 1 300); do
      redis-cli -p "$port" info replication 2>/dev/null | grep -q '^role:master' && break
      redis-cli -p "$port" info replication 2>/dev/null | grep -q '^master_link_status:up' && break
      sleep 0.1
    done
  done
  for port in "${ports[@]}"; do urls+="${urls:+,}redis://127.0.0.1:$port/"; done
  export REDIS_CLUSTER_URLS="$urls"
  echo "redis cluster (3 primaries, 3 replicas) on $REDIS_CLUSTER_URLS" >&2
}

topology_start_sentinel() {
  topology_init
  local primary replica port urls=""
  primary=$(topology_free_port)
  topology_redis sentinel-primary "$primary"
  replica=$(topology_free_port)
  topology_redis sentinel-replica "$replica" --replicaof 127.0.0.1 "$primary"
  for _ in $(seq 1 100); do
    redis-cli -p "$replica" info replication | grep -q '^master_link_status:up' && break
    sleep 0.1
  done
  export REDIS_SENTINEL_MASTER=lockmaster
  for i in 1 2 3; do
    port=$(topology_free_port)
    mkdir -p "$topology_dir/sentinel-$i"
    cat >"$topology_dir/sentinel-$i/sentinel.conf" <<EOF
port $port
bind 127.0.0.1
daemonize yes
pidfile $topology_dir/sentinel-$i/pid
logfile $topology_dir/sentinel-$i/log
dir $topology_dir/sentinel-$i
sentinel monitor $REDIS_SENTINEL_MASTER 127.0.0.1 $primary 2
sentinel down-after-milliseconds $REDIS_SENTINEL_MASTER 5000
sentinel failover-timeout $REDIS_SENTINEL_MASTER 10000
sentinel parallel-syncs $REDIS_SENTINEL_MASTER 1
EOF
    redis-sentinel "$topology_dir/sentinel-$i/sentinel.conf"
    topology_wait_ping "$port"
    topology_pids+=("$(cat "$topology_dir/sentinel-$i/pid")")
    urls+="${urls:+,}redis://127.0.0.1:$port/"
  done
  # Ready when each sentinel knows the replica and the other two sentinels.
  for url in ${urls//,/ }; do
    port=${url##*:}
    port=${port%/}
    for _ in $(seq 1 300); do
      local known
      known=$(redis-cli -p "$port" sentinel master "$REDIS_SENTINEL_MASTER" 2>/dev/null |
        awk 'prev=="num-slaves"{s=$0} prev=="num-other-sentinels"{o=$0} {prev=$0} END{print s" "o}')
      [ "$known" = "1 2" ] && break
      sleep 0.1
    done
  done
  export REDIS_SENTINEL_URLS="$urls"
  echo "redis sentinel: primary 127.0.0.1:$primary, replica 127.0.0.1:$replica," \
    "sentinels $REDIS_SENTINEL_URLS (master name $REDIS_SENTINEL_MASTER)" >&2
}

topology_stop() {
  local pid
  for pid in "${topology_pids[@]}"; do
    # A test may have stopped a node with SIGSTOP; a stopped process ignores SIGTERM until resumed.
    kill -CONT "$pid" >/dev/null 2>&1 || true
    kill "$pid" >/dev/null 2>&1 || true
  done
  # A node writes its nodes.conf and log while it shuts down: wait (up to 10 s) until every one
  # is gone before removing their directory, or the removal races the last writes.
  for pid in "${topology_pids[@]}"; do
    for _ in $(seq 1 100); do
      kill -0 "$pid" >/dev/null 2>&1 || break
      sleep 0.1
    done
  done
  topology_pids=()
  if [ -n "$topology_dir" ]; then
    rm -rf "$topology_dir" 2>/dev/null || { sleep 1; rm -rf "$topology_dir" || true; }
    topology_dir=""
  fi
}
