#!/usr/bin/env bash
# `make demo`: install, migrate, and serve the dashboard on the simulated cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
# The demo runs on embedded parts only (SQLite, in-memory layer, simulated cluster): what this shell points
# at real services is left out (settings refuse the demo beside them, since it opens reads to anyone).
for name in DATABASE_URL REDIS_URL KUBECONFIG GANGWEB_CLUSTER KUBERNETES_SERVICE_HOST; do
  if [ -n "${!name:-}" ]; then
    echo "==> make demo runs on embedded parts: ignoring $name (run 'python manage.py demo' yourself to use it)" >&2
    unset "$name"
  fi
done
export GANGWEB_DEMO="${GANGWEB_DEMO:-1}"
exec .venv/bin/python manage.py demo "$@"
