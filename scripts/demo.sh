#!/usr/bin/env bash
# `make demo`: install, migrate, and serve the dashboard on the simulated cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
export GANGWEB_DEMO="${GANGWEB_DEMO:-1}"
exec .venv/bin/python manage.py demo "$@"
