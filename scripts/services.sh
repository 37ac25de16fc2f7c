#!/usr/bin/env bash
# Makes sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer, starting them when
# they are installed but stopped. Says exactly what is missing otherwise, and fails.
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

missing=()

if ! reachable 127.0.0.1 5432; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "==> starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main start || true
  fi
  wait_for 127.0.0.1 5432 20 || missing+=("PostgreSQL on 127.0.0.1:5432 (install postgresql, trust auth for user postgres on 127.0.0.1)")
fi

if ! reachable 127.0.0.1 6379; then
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
