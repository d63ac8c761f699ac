#!/usr/bin/env bash
# Creates .venv (Python 3.11 when pyenv has it) with whyalive, torch==2.13.0, NumPy and the
# dev tools. Idempotent: a second run only reinstalls whyalive (which rebuilds the C core).
# Each stage prints one line saying what it does; times are in the README.
set -euo pipefail
cd "$(dirname "$0")/.."
STARTED=$SECONDS
say() { echo "== setup-env [$((SECONDS - STARTED)) s] $*"; }

PYTHON="${WHYALIVE_PYTHON:-}"
if [ -z "$PYTHON" ]; then
  for candidate in "$HOME/.pyenv/versions/3.11.7/bin/python" python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PYTHON="$candidate"; break; fi
  done
fi
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $("$PYTHON" --version 2>&1)"
  "$PYTHON" -m venv .venv
fi
say "upgrading pip"
.venv/bin/python -m pip install -q --upgrade "pip>=25.1"
# torch only as this exact pin: an unpinned torch pulls a multi-GB CUDA build.
say "installing torch==2.13.0 (CPU build; about 1 minute the first time)"
.venv/bin/python -m pip install -q "torch==2.13.0"
say "installing the dev tools (pytest, NumPy, selenium, Jupyter kernel...; about 1 minute the first time)"
.venv/bin/python -m pip install -q --group dev
say "building and installing whyalive (editable, with its C graph core)"
.venv/bin/python -m pip install -q -e . --no-deps
say "ready: $(.venv/bin/whyalive --version)"
