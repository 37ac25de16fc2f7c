#!/usr/bin/env bash
# Makes sure PostgreSQL (127.0.0.1:5432, trust auth for `postgres`) and Redis (127.0.0.1:6379)
# answer: installs them from Debian's packages when missing (root with apt), starts them when
# stopped. Says exactly what is missing otherwise, and fails.
set -uo pipefail

reachable() {  # host port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && { exec 3>&- 3<&-; return 0; }
  return 1
}

wait_for() {  # host port seconds
  local i
  for ((i = 0; i < $3 * 10; i++)); do reachable "$1" "$2" && return 0; sleep 0.1; done
  return 1
}

can_apt() { command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; }

export DEBIAN_FRONTEND=noninteractive
install_postgresql() {
  can_apt || return 1
  echo "==> installing postgresql from Debian's packages"
  apt-get install -y -q postgresql >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q postgresql >/dev/null 2>&1; }
}
install_redis() {
  can_apt || return 1
  echo "==> installing redis-server from Debian's packages"
  apt-get install -y -q redis-server >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q redis-server >/dev/null 2>&1; }
}

missing=()

if ! reachable 127.0.0.1 5432; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
    install_postgresql || true
  fi
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -n "$(ls /etc/postgresql 2>/dev/null)" ]; then
    version="$(ls /etc/postgresql | sort -V | tail -n1)"
    hba="/etc/postgresql/$version/main/pg_hba.conf"
    # The suite connects as postgres over TCP without a password (loopback only).
    if [ -w "$hba" ] && ! grep -q '^# gangweb: trust on loopback' "$hba"; then
      { echo '# gangweb: trust on loopback'
        echo 'host all all 127.0.0.1/32 trust'
        echo 'host all all ::1/128 trust'
        cat "$hba"; } > "$hba.gangweb" && mv "$hba.gangweb" "$hba"
      chown postgres:postgres "$hba" 2>/dev/null || true
    fi
    echo "==> starting PostgreSQL $version"
    pg_ctlcluster --skip-systemctl-redirect "$version" main start 2>/dev/null || \
      pg_ctlcluster --skip-systemctl-redirect "$version" main reload 2>/dev/null || true
  fi
  wait_for 127.0.0.1 5432 30 || missing+=("PostgreSQL on 127.0.0.1:5432 (install postgresql, trust auth for user postgres on 127.0.0.1)")
fi

if ! reachable 127.0.0.1 6379; then
  command -v redis-server >/dev/null 2>&1 || install_redis || true
  if command -v redis-server >/dev/null 2>&1; then
    echo "==> starting Redis"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log || \
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
  fi
  wait_for 127.0.0.1 6379 10 || missing+=("Redis on 127.0.0.1:6379 (install redis-server)")
fi

if [ ${#missing[@]} -gt 0 ]; then
  printf 'missing service: %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "==> PostgreSQL and Redis are reachable"
