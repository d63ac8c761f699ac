"""``python -m whyalive`` runs the command line."""

from __future__ import annotations

import sys

from whyalive.cli import main

sys.exit(main())
