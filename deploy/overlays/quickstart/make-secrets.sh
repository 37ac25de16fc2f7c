#!/bin/sh
# Writes deploy/overlays/quickstart/secrets.env (kept out of git): random passwords for the in-cluster
# PostgreSQL and Redis, a random SECRET_KEY, and the URLs gangweb reaches them at. Keeps an existing file
# (its passwords are already in the databases' volumes); --force writes a new one.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/secrets.env"
if [ -e "$out" ] && [ "${1:-}" != "--force" ]; then
  echo "$out exists; kept (--force writes new secrets)" >&2
  exit 0
fi
random() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
pg=$(random)
redis=$(random)
umask 077
cat > "$out" <<ENV
SECRET_KEY=$(random)
POSTGRES_PASSWORD=$pg
DATABASE_URL=postgres://gangweb:$pg@gangweb-postgres:5432/gangweb
REDIS_PASSWORD=$redis
REDIS_URL=redis://:$redis@gangweb-redis:6379/0
ENV
echo "wrote $out" >&2
