#!/usr/bin/env bash
# Creates .venv (Python 3.11 when pyenv has it) with whyalive, torch==2.13.0, NumPy and the
# dev tools. Idempotent: a second run only reinstalls whyalive (which rebuilds the C core).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${WHYALIVE_PYTHON:-}"
if [ -z "$PYTHON" ]; then
  for candidate in "$HOME/.pyenv/versions/3.11.7/bin/python" python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PYTHON="$candidate"; break; fi
  done
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade "pip>=25.1"
# torch only as this exact pin: an unpinned torch pulls a multi-GB CUDA build.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q --group dev
.venv/bin/python -m pip install -q -e . --no-deps
