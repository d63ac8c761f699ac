#!/usr/bin/env bash
# One command from a fresh clone: set up .venv and run the bundled stage_backward leak.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
status=0
.venv/bin/whyalive demo || status=$?
# Exit 1 means "leak found", which is what the demo is for.
if [ "$status" -eq 1 ]; then exit 0; fi
exit "$status"
