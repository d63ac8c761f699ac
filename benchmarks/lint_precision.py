"""Precision of `whyalive lint` on installed packages: the share of default findings that can
hold a heavy object, from hand judgments, overall and on a fixed-seed sample.

    python benchmarks/lint_precision.py SITE_PACKAGES PACKAGE [PACKAGE ...]
        [--judgments benchmarks/data/lint_judgments.tsv] [--seed 17] [--sample 30]

Lints each package directory under SITE_PACKAGES at default settings (`--isolated`), draws
the sample with `random.Random(seed).sample` over the findings sorted by path, line and code,
and joins both with the judgments file (tab-separated: path relative to SITE_PACKAGES, line,
code, `yes`/`no`, what the finding keeps alive). Exits 1 when a finding has no judgment yet
(they are listed, to be judged by reading the code), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

_Key = tuple[str, int, str]


def _findings(site: Path, packages: list[str]) -> list[_Key]:
    argv = [sys.executable, "-m", "whyalive", "lint", "--isolated", "--format", "json"]
    done = subprocess.run(
        [*argv, *(str(site / p) for p in packages)], capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"whyalive lint failed ({done.returncode}): {done.stderr[-2000:]}")
    records = json.loads(done.stdout)
    return sorted(
        (str(Path(r["path"]).relative_to(site)), int(r["line"]), str(r["code"])) for r in records
    )


def _judgments(path: Path) -> dict[_Key, tuple[bool, str]]:
    judged: dict[_Key, tuple[bool, str]] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        file, number, code, heavy, what = line.split("\t")
        judged[file, int(number), code] = (heavy == "yes", what)
    return judged


def _share(keys: list[_Key], judged: dict[_Key, tuple[bool, str]]) -> str:
    heavy = sum(judged[k][0] for k in keys if k in judged)
    known = sum(k in judged for k in keys)
    return f"{heavy} of {known} ({100 * heavy / known:.1f} %)" if known else "nothing judged"


def main() -> int:
    """Print every finding with its judgment, then the overall and sampled precision."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("packages", nargs="+")
    here = Path(__file__).parent
    parser.add_argument("--judgments", type=Path, default=here / "data" / "lint_judgments.tsv")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--sample", type=int, default=30)
    args = parser.parse_args()
    print(f"linting {', '.join(args.packages)} (this takes about a minute)", file=sys.stderr)
    findings = _findings(args.site.resolve(), args.packages)
    judged = _judgments(args.judgments)
    sample = set(random.Random(args.seed).sample(findings, min(args.sample, len(findings))))
    for key in findings:
        heavy, what = judged.get(key, (None, "NOT JUDGED"))
        mark = {True: "heavy", False: "light", None: "?"}[heavy]
        print(f"{'*' if key in sample else ' '} {mark:5} {key[0]}:{key[1]} {key[2]}  {what}")
    print(f"\nfindings: {len(findings)}; can hold a heavy object: {_share(findings, judged)}")
    print(f"sample of {len(sample)} (seed {args.seed}, marked *): {_share(sorted(sample), judged)}")
    for code, count in sorted(Counter(k[2] for k in findings).items()):
        keys = [k for k in findings if k[2] == code]
        print(f"  {code}: {count} findings, heavy {_share(keys, judged)}")
    missing = [k for k in findings if k not in judged]
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
