#!/usr/bin/env bash
# One command from a fresh clone: install everything the tests need, then run the suite:
# the full suite on Python 3.11 (torch, NumPy, Graphviz, Chromium), the core tests on
# every other CPython 3.10+ that pyenv offers, and on CPython 3.14 (Debian's, C core, when
# root; Pyodide's, pure-Python core). Every
# leg runs even when an earlier one failed; the failed legs are listed at the end, and the
# exit status is 1 if any failed. Each stage prints one line saying what it does; times
# are in the README.
set -uo pipefail
cd "$(dirname "$0")/.."
STARTED=$SECONDS
FAILED=()

say() { echo "== test.sh [$((SECONDS - STARTED)) s] $*"; }

# leg NAME COMMAND...: run one leg of the suite; a failure is remembered, not fatal.
leg() {
  local name="$1" status=0
  shift
  "$@" || status=$?
  if [ "$status" -eq 0 ]; then
    say "$name: passed"
  else
    say "$name: FAILED (exit $status)"
    FAILED+=("$name (exit $status)")
  fi
}

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  need=""
  command -v dot >/dev/null 2>&1 || need="$need graphviz"
  command -v chromium >/dev/null 2>&1 || need="$need chromium"
  command -v chromedriver >/dev/null 2>&1 || need="$need chromium-driver"
  if [ -n "$need" ]; then
    say "installing Debian packages:$need (about 1 minute)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
  fi
fi
say "setting up .venv (scripts/setup-env.sh)"
bash scripts/setup-env.sh || { say "setting up .venv FAILED: no test ran"; exit 1; }

export PYTHONDEVMODE=1
# Each worker takes the next test when it is free: with the default split, a few
# half-minute tests (Ctrl-C at every line, the plugin's own suites) land on one worker
# near the end while the other idles (full suite 304 -> 256 s).
DIST=(--dist worksteal)
say "full suite on Python 3.11 (pytest -n 2 --whyalive; about 4.5 min on 2 quiet cores)"
# Dogfooding: the suite runs under its own plugin, so a test that leaks tensors fails.
# test-artifacts/ (at the repository root) keeps the browser tests' screenshots, one per
# page and window size, for CI to publish; a line after the last leg says how many.
rm -rf test-artifacts  # only this run's screenshots
leg "full suite on Python 3.11" \
  .venv/bin/python -m pytest -W error::ResourceWarning -n 2 "${DIST[@]}" --whyalive "$@"

# tests/test_interrupts.py (Ctrl-C at every line: its first four occurrences on the C core,
# the first of each line only the Python twin runs; four scenarios) runs whole in the full
# suite above. On the
# other Pythons it runs the check and monitor scenarios on the C core, four occurrences of
# every line too: what differs there is the tracer and the bytecode (on 3.12+ a line event
# also fires where a generator left suspended is closed). The Python twin's runs and the
# no-compiler fallback run only in the full suite (they were 3/4 of a leg's time).
CORE_TESTS="tests/test_check.py tests/test_graphcore.py tests/test_release.py tests/test_diagnose.py tests/test_structures.py tests/test_gc_safety.py tests/test_adversarial.py tests/test_report_schema.py tests/test_collector.py tests/test_user_gc_tricks.py tests/test_fork_and_threads.py tests/test_interrupts.py"

# core_leg VERSION_DIR: a venv for that Python with whyalive built for it, then its core tests.
core_leg() {
  local python="$1/bin/python" venv=".venv-$(basename "$1")"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv" || return 1
  "$venv/bin/python" -m pip install -q --upgrade "pip>=25.1" || return 1
  "$venv/bin/python" -m pip install -q pytest "pytest-xdist>=3.2" hypothesis numpy || return 1
  "$venv/bin/python" -m pip install -q . --no-deps || return 1
  # shellcheck disable=SC2086  # CORE_TESTS is a list of paths
  WHYALIVE_TEST_INTERRUPT_SCENARIOS=check,monitor \
    "$venv/bin/python" -m pytest -q -n 2 "${DIST[@]}" $CORE_TESTS \
    --deselect "tests/test_interrupts.py::test_keyboard_interrupt_at_every_line_leaves_no_harm[check-python]" \
    --deselect "tests/test_interrupts.py::test_keyboard_interrupt_at_every_line_leaves_no_harm[monitor-python]" \
    --deselect tests/test_interrupts.py::test_without_the_compiled_module_harm_is_only_where_documented
}

for version_dir in "$HOME"/.pyenv/versions/3.1[0-9]*; do
  [ -x "$version_dir/bin/python" ] || continue
  version="$(basename "$version_dir")"
  case "$version" in 3.11.*) continue ;; esac
  say "core tests on Python $version (venv, build, tests on 2 workers: about 1 minute)"
  leg "core tests on Python $version" core_leg "$version_dir"
done

# CPython 3.14 on the C core, which pyenv cannot build here: Debian sid's python3.14 in a
# chroot (needs root, as the Debian packages above do).
if [ "$(id -u)" = 0 ]; then
  say "core tests on CPython 3.14 (Debian sid chroot, C core; first run makes it: about 1.5 min)"
  # shellcheck disable=SC2086  # CORE_TESTS is a list of paths
  WHYALIVE_TEST_INTERRUPT_SCENARIOS=check,monitor leg "core tests on CPython 3.14 (Debian sid)" \
    bash scripts/test-debian-python.sh -q -n 2 "${DIST[@]}" $CORE_TESTS \
    --deselect "tests/test_interrupts.py::test_keyboard_interrupt_at_every_line_leaves_no_harm[check-python]" \
    --deselect "tests/test_interrupts.py::test_keyboard_interrupt_at_every_line_leaves_no_harm[monitor-python]" \
    --deselect tests/test_interrupts.py::test_without_the_compiled_module_harm_is_only_where_documented
  # Its debug build checks the C core's use of every object (Ctrl-C at every line is
  # Python's business: left to the leg above).
  say "core tests on CPython 3.14's debug build (same chroot; about 1 min)"
  # shellcheck disable=SC2086  # CORE_TESTS is a list of paths
  leg "core tests on CPython 3.14's debug build (Debian sid)" \
    bash scripts/test-debian-python.sh --debug -q -n 2 "${DIST[@]}" ${CORE_TESTS/tests\/test_interrupts.py/}
else
  say "core tests on CPython 3.14 (Debian sid chroot) not run: they need root"
fi

# CPython 3.14 again, on the pure-Python core and 3.14.0's incremental collector: Pyodide (3.14 compiled to WebAssembly) under
# node, on the pure-Python core, under the plugin like the full suite. Installs into
# .cache/pyodide first, then runs offline.
say "core tests on CPython 3.14 (Pyodide under node, pure-Python core; install, then offline)"
# shellcheck disable=SC2086  # CORE_TESTS is a list of paths
leg "core tests on CPython 3.14 (Pyodide)" bash scripts/test-pyodide.sh -q --whyalive $CORE_TESTS

shots=$(find test-artifacts -name '*.png' 2>/dev/null | wc -l)
say "browser screenshots: $shots PNG file(s) in $(pwd)/test-artifacts/"

if [ "${#FAILED[@]}" -gt 0 ]; then
  say "${#FAILED[@]} leg(s) failed:"
  printf '   %s\n' "${FAILED[@]}"
  exit 1
fi
say "every leg passed"
