#!/usr/bin/env bash
# One command from a fresh clone: set up .venv and run the bundled stage_backward leak.
# Each stage prints one line saying what it does; times are in the README.
set -euo pipefail
cd "$(dirname "$0")/.."
STARTED=$SECONDS
say() { echo "== demo.sh [$((SECONDS - STARTED)) s] $*"; }
say "setting up .venv (scripts/setup-env.sh)"
bash scripts/setup-env.sh
say "running 'whyalive demo' (one pipelining backward step on torch tensors)"
status=0
.venv/bin/whyalive demo || status=$?
# Exit 1 means "leak found", which is what the demo is for.
if [ "$status" -eq 1 ]; then exit 0; fi
exit "$status"
