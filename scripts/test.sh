#!/usr/bin/env bash
# `make test`: install what the suite needs, start what it needs, run the whole suite against real
# PostgreSQL and real Redis. Extra arguments go to pytest (make test ARGS=... is not needed:
# ./scripts/test.sh -k webhook works).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh
./scripts/services.sh

# Browser tests drive Debian's Chromium; install it when we may (root with apt), never a download.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "==> installing Debian's chromium for the browser tests"
  (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }) \
    || echo "warning: could not install chromium; browser tests will report it" >&2
fi

# tests/realcluster and tests/deploy run a real control plane (hack/cluster): build its binaries now, once
# (cached outside the repository; the first build takes long, docs/kube.md says how long), so the run
# shows the progress. A failed build does not stop the suite: the tests that need the cluster fail and say why.
echo "==> real cluster binaries (hack/cluster; cached after the first build)"
.venv/bin/python hack/cluster/cluster.py build >/dev/null \
  || echo "warning: hack/cluster build failed; the real-cluster tests will fail and say why" >&2

# tests/deploy/test_monitoring.py checks and unit-tests the alerts with promtool: Debian's prometheus package
# carries it; install it when we may, as for Chromium.
if ! command -v promtool >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "==> installing Debian's prometheus (promtool) for the monitoring tests"
  (apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1; }) \
    || echo "warning: could not install prometheus; tests/deploy/test_monitoring.py will report it" >&2
fi

# tests/deploy/test_image.py builds the image as `make release` does: Debian's buildah, and mmdebstrap for the
# base it makes (once; kept under ~/.cache/gangweb). Installed when we may, as for Chromium.
if { ! command -v buildah >/dev/null 2>&1 || ! command -v mmdebstrap >/dev/null 2>&1; } \
    && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "==> installing Debian's buildah and mmdebstrap for the image test"
  (apt-get install -y -q buildah mmdebstrap >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q buildah mmdebstrap >/dev/null 2>&1; }) \
    || echo "warning: could not install buildah and mmdebstrap; tests/deploy/test_image.py will skip and say why" >&2
fi

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/gangweb}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/15}"
export GANGWEB_REQUIRE_SERVICES=1

# The benchmark tests run `manage.py bench ...` on DATABASE_URL itself (they migrate it): make sure it exists.
.venv/bin/python - <<'PY'
import os

import dj_database_url
import psycopg

cfg = dj_database_url.parse(os.environ["DATABASE_URL"])
if cfg["ENGINE"].endswith("postgresql"):
    with psycopg.connect(
        host=cfg["HOST"] or "127.0.0.1", port=cfg["PORT"] or 5432, user=cfg["USER"] or "postgres",
        password=cfg["PASSWORD"] or None, dbname="postgres", autocommit=True,
    ) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (cfg["NAME"],)).fetchone():
            conn.execute(f'CREATE DATABASE "{cfg["NAME"]}"')
            print(f"==> created database {cfg['NAME']}")
PY

# The habits first (seconds): lint, format, the import contracts of docs/ARCHITECTURE.md, and the types
# (mypy over the files [tool.mypy] in pyproject.toml names).
echo "==> ruff check, ruff format --check, lint-imports, mypy"
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
.venv/bin/lint-imports --no-logo --no-cache >/dev/null || .venv/bin/lint-imports --no-logo --no-cache
.venv/bin/mypy --no-error-summary >/dev/null || .venv/bin/mypy

exec .venv/bin/python -m pytest "$@"
