#!/usr/bin/env bash
# One command from a fresh clone: install everything the tests need, then run the suite:
# the full suite on Python 3.11 (torch, NumPy, Graphviz, Chromium), the core tests on
# every other CPython 3.10+ that pyenv offers, and on CPython 3.14 through Pyodide.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  need=""
  command -v dot >/dev/null 2>&1 || need="$need graphviz"
  command -v chromium >/dev/null 2>&1 || need="$need chromium"
  command -v chromedriver >/dev/null 2>&1 || need="$need chromium-driver"
  if [ -n "$need" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
  fi
fi
bash scripts/setup-env.sh
export PYTHONDEVMODE=1
# Dogfooding: the suite runs under its own plugin, so a test that leaks tensors fails.
.venv/bin/python -m pytest -W error::ResourceWarning -n 2 --whyalive "$@"

CORE_TESTS="tests/test_check.py tests/test_graphcore.py tests/test_release.py tests/test_diagnose.py tests/test_structures.py tests/test_gc_safety.py tests/test_adversarial.py tests/test_report_schema.py tests/test_collector.py"
for version_dir in "$HOME"/.pyenv/versions/3.1[0-9]*; do
  [ -x "$version_dir/bin/python" ] || continue
  version="$(basename "$version_dir")"
  case "$version" in 3.11.*) continue ;; esac
  venv=".venv-$version"
  [ -x "$venv/bin/python" ] || "$version_dir/bin/python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade "pip>=25.1"
  "$venv/bin/python" -m pip install -q pytest hypothesis numpy
  "$venv/bin/python" -m pip install -q . --no-deps
  echo "== core tests on Python $version"
  "$venv/bin/python" -m pytest -q $CORE_TESTS
done

# CPython 3.14, which pyenv cannot build here: Pyodide (3.14 compiled to WebAssembly) under
# node, on the pure-Python core, under the plugin like the full suite. Installs into
# .cache/pyodide first, then runs offline.
bash scripts/test-pyodide.sh -q --whyalive $CORE_TESTS
