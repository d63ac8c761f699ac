#!/usr/bin/env bash
# The CPython 3.14 leg: pytest on Pyodide (CPython 3.14 compiled to WebAssembly) under node,
# on whyalive's pure-Python core (no C compiler there).
#
#   bash scripts/test-pyodide.sh [pytest arguments]     # needs node >= 18 and python3
#
# Everything is installed first into .cache/pyodide: Pyodide from the npm registry, pure-Python
# wheels of the test tools from PyPI. The run itself fetches nothing. Exit code: pytest's.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every pyodide 314.x ships CPython 3.14.0 or 3.14.2: the incremental collector of 3.14.0-3.14.4.
PYODIDE_VERSION=314.0.8
# No NumPy or torch: neither has a wheel for Pyodide's ABI on PyPI or npm, so the tests that
# need them skip, saying so. jsonschema 4.18+ needs rpds-py (no such wheel either); 4.17 is
# pure Python.
WHEELS=("pytest>=8" "hypothesis>=6" "jsonschema>=4.17,<4.18")
cache=.cache/pyodide
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "test-pyodide.sh: the CPython 3.14 leg needs node (18+) and npm" >&2
  exit 2
fi
python="${PYTHON:-python3}"
[ -x .venv/bin/python ] && python=.venv/bin/python

installed="$(node -p "try { require('./$cache/node_modules/pyodide/package.json').version } catch { '' }")"
if [ "$installed" != "$PYODIDE_VERSION" ]; then
  npm install --prefix "$cache" --no-save --no-audit --no-fund --loglevel=error \
    "pyodide@$PYODIDE_VERSION" >/dev/null
fi
stamp="$cache/site/.requirements"
if [ "$(cat "$stamp" 2>/dev/null)" != "${WHEELS[*]}" ]; then
  rm -rf "$cache/site"
  "$python" -m pip install --quiet --disable-pip-version-check --target "$cache/site" \
    --only-binary=:all: --platform any --implementation py --python-version 3.14 \
    --no-compile "${WHEELS[@]}"
  echo "${WHEELS[*]}" >"$stamp"
fi

node_flags=()
# asyncio.run() needs WebAssembly stack switching (JSPI), which node 20 has behind this flag.
if node --experimental-wasm-stack-switching -e 0 2>/dev/null; then
  node_flags+=(--experimental-wasm-stack-switching)
fi
exec node "${node_flags[@]}" scripts/pyodide-pytest.mjs "$cache" "$@"
