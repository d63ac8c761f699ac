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
# Pure-Python wheels only: jsonschema 4.18+ needs rpds-py (no wheel for Pyodide); 4.17 is
# pure Python. NumPy is looked for below; torch has no Pyodide build.
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
  rm -rf "$cache/numpy" # a wheel, or the reason there is none, for another Pyodide's ABI
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

# NumPy: Pyodide's lock names the wheel its ABI takes (numpy-2.4.6-cp314-cp314-
# pyemscripten_2026_0_wasm32.whl for 314.0.8) but the npm package does not ship it, and PyPI
# had none when this was written. So at most once a day, until one is found, look for a
# numpy wheel with the lock's tags in the npm package, then on PyPI (pip download with the
# platform tag); found, it is kept in $cache/numpy and loaded before pytest. Otherwise the
# NumPy tests skip, and their reason (in $cache/numpy/reason) says what was asked and when.
numpy_dir="$cache/numpy"
mkdir -p "$numpy_dir"
if ! compgen -G "$numpy_dir/numpy-*.whl" >/dev/null &&
  [ -z "$(find "$numpy_dir/reason" -mmin -1440 2>/dev/null)" ]; then
  lock="$cache/node_modules/pyodide/pyodide-lock.json"
  # The lock's numpy file name, else its ABI's tags: cp314-cp314-pyemscripten_2026_0_wasm32.
  numpy_file="$(node -p "const l = require('./$lock'); (l.packages.numpy || {}).file_name ||
    'numpy-0-cp314-cp314-pyemscripten_' + l.info.abi_version + '_' + l.info.arch + '.whl'")"
  tags="${numpy_file%.whl}"
  tags="${tags#numpy-*-}"                  # cp314-cp314-pyemscripten_2026_0_wasm32
  abi="${tags#*-}" && abi="${abi%%-*}"     # cp314
  platform="${tags##*-}"                   # pyemscripten_2026_0_wasm32
  if [ -f "$cache/node_modules/pyodide/$numpy_file" ]; then
    cp "$cache/node_modules/pyodide/$numpy_file" "$numpy_dir/"
  else
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps --timeout 15 \
      --retries 1 --only-binary=:all: --implementation cp --python-version 3.14 \
      --abi "$abi" --platform "$platform" --dest "$numpy_dir" numpy >/dev/null 2>&1 || true
  fi
  if ! compgen -G "$numpy_dir/numpy-*.whl" >/dev/null; then
    echo "needs NumPy: no numpy wheel tagged $tags was found in the pyodide npm package" \
      "or on PyPI (asked $(date -u +%Y-%m-%d))" >"$numpy_dir/reason"
  fi
fi

node_flags=()
# asyncio.run() needs WebAssembly stack switching (JSPI), which node 20 has behind this flag.
if node --experimental-wasm-stack-switching -e 0 2>/dev/null; then
  node_flags+=(--experimental-wasm-stack-switching)
fi
exec node "${node_flags[@]}" scripts/pyodide-pytest.mjs "$cache" "$@"
