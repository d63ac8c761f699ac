"""Check the rules' tests on the text against a corpus: no finding where its rule's test is false.

    python benchmarks/lint_text_tests.py TREE [TREE ...]

Parses every file of the trees (whatever the tests say), runs every rule (opt-in ones
included), and checks that each finding's rule passes its test on that file's text, and that
the lint as shipped (which parses only files some selected rule's test passes, and runs only
those rules) gives the same findings. Prints the files and findings checked, the share of
the bytes the default rules parse, and the time the tests took; exits 1 on any miss.
tests/test_lint_prefilter.py runs the same check on a smaller corpus.
"""

from __future__ import annotations

import argparse
import ast
import gc
import time

from whyalive.lint import (
    RULES,
    _without_noqa,
    iter_python_files,
    lint_source,
    read_source,
    rules_for,
    select_rules,
)
from whyalive.lint.codetext import CodeText
from whyalive.lint.engine import lint_tree


def main() -> int:
    """Check every file of the trees; print the totals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+")
    args = parser.parse_args()
    gc.disable()
    default = select_rules()
    files = findings = misses = unsure = 0
    total = parsed = 0
    spent = 0.0
    for path in iter_python_files(args.trees):
        source = read_source(path)
        if not isinstance(source, str):
            continue
        files += 1
        total += len(source)
        start = time.process_time()
        text = CodeText(source)
        passed = {r.code for r in RULES if r.may_report is not None and r.may_report(text)}
        wanted = rules_for(source, default)
        spent += time.process_time() - start
        unsure += text.unsure
        parsed += len(source) if wanted is not None else 0
        try:
            tree = ast.parse(source, path)
        except (SyntaxError, ValueError):
            continue
        found = lint_tree(tree, source, path, RULES)
        findings += len(found)
        for finding in found:
            if finding.code not in passed and not text.unsure:
                misses += 1
                print(f"MISS {path}:{finding.line}: {finding.code}")
        if lint_source(source, path, select="WAL,WAL9") != _without_noqa(found, source):
            misses += 1
            print(f"DIFFERS {path}")
    share = parsed / total if total else 0.0
    print(
        f"{files} files, {findings} findings (every rule), {misses} missed; "
        f"{unsure} files parsed because Python could lex them otherwise; "
        f"the default rules parse {share:.1%} of the bytes; the tests took {spent:.2f} s"
    )
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
