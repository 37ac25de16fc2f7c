#!/usr/bin/env bash
# Creates .venv with Python 3.11 and installs gangweb with its test extras, at the versions in
# constraints.txt. Re-running is cheap: nothing is installed when the inputs did not change.
set -euo pipefail
cd "$(dirname "$0")/.."

python_bin="${PYTHON:-}"
if [ -z "$python_bin" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      python_bin="$candidate"; break
    fi
  done
fi
if [ -z "$python_bin" ]; then
  echo "gangweb needs Python 3.11 (python3.11 or python3 on PATH, or PYTHON=/path/to/python3.11)" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $python_bin"
  "$python_bin" -m venv .venv
fi

stamp=.venv/.gangweb-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
  echo "==> installing gangweb and its dependencies (pinned by constraints.txt)"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[test]"
  touch "$stamp"
fi
