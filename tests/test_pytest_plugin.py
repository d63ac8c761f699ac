"""The pytest plugin, run through pytester: real pytest runs in a subprocess where gc matters."""

from __future__ import annotations

import json

import pytest

from capabilities import needs_torch_installed
from whyalive.report import Report

pytest.importorskip("numpy")

SUITE = """
import gc
import subprocess
import sys

import numpy
import pytest

from whyalive import LeakError


def make_cycle(nbytes):
    holder = [numpy.zeros(nbytes // 8)]
    holder.append(holder)


@pytest.fixture
def leaky_fixture():
    make_cycle(8000)
    return 1


@pytest.fixture
def leaky_teardown():
    yield 1
    make_cycle(16000)


def test_clean():
    activations = [numpy.zeros(100)]


def test_recursive_closure():
    stage_output_tensors = [numpy.zeros((16, 256), dtype=numpy.float32)]

    def extract_tensors_with_grads(value):
        stage_output_tensors.append(value)
        return extract_tensors_with_grads

    extract_tensors_with_grads(1)


def test_fixture_leak(leaky_fixture):
    pass


def test_teardown_leak(leaky_teardown):
    pass


@pytest.mark.whyalive_skip
def test_opted_out_leaves_garbage():
    make_cycle(64000)


def test_after_earlier_garbage():
    gc.collect()


def test_spawns_a_subprocess():
    code = "import numpy; h = [numpy.zeros(1000)]; h.append(h)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_own_handle(whyalive):
    with pytest.raises(LeakError):
        with whyalive:
            make_cycle(800)
    assert whyalive.report.total_bytes == 800


@pytest.mark.whyalive(min_bytes=10**9)
def test_below_the_marker_threshold():
    make_cycle(8000)
"""


def test_leaks_fail_with_explanation_and_are_blamed_on_test_and_fixture(
    pytester: pytest.Pytester,
) -> None:
    """--whyalive fails the leaking tests, names the user's code, blames fixtures and phases."""
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("--whyalive", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7, failed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*whyalive: 16.0 KiB, cut the closure variable extract_tensors_with_grads at "
            "test_suite.py:* (recursive-closure)",
            "*Leak found in the call of test_suite.py::test_recursive_closure:",
            "*recursive-closure*",
            "*Cut:*extract_tensors_with_grads*",
            "*Fix:*del extract_tensors_with_grads*",
            "*Holds:*",
            "*stage_output_tensors*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*Leak found in the setup (fixture leaky_fixture) of test_suite.py::test_fixture_leak:"]
    )
    result.stdout.fnmatch_lines(
        [
            "*Leak found in the teardown (fixture leaky_teardown) of "
            "test_suite.py::test_teardown_leak:"
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*= whyalive =*",
            "2 cycle signatures left heavy objects in cyclic garbage:",
            "  * self-containing-container: 23.4 KiB in 2 tests (failing)",
            "      test_suite.py::test_fixture_leak [setup (fixture leaky_fixture)]: 7.8 KiB",
            "      test_suite.py::test_teardown_leak [teardown (fixture leaky_teardown)]: 15.6 KiB",
            "  * recursive-closure: 16.0 KiB in 1 test (failing)",
            "      test_suite.py::test_recursive_closure [call]: 16.0 KiB",
            "Note: whyalive sees what Python's cyclic GC sees*",
        ]
    )
    # The blind-spot note is said once for the session, not in each failing test's report.
    assert result.stdout.str().count("Note: whyalive sees what Python's cyclic GC sees") == 1
    assert "Not visible to the cyclic GC" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "FAILED test_suite.py::test_recursive_closure*",
            "FAILED test_suite.py::test_fixture_leak*",
            "ERROR test_suite.py::test_teardown_leak*",
        ],
        consecutive=False,
    )
    assert "test_after_earlier_garbage [" not in result.stdout.str()
    assert "62.5 KiB" not in result.stdout.str(), "the opted-out test's garbage was re-reported"


INERT = """
import gc

import numpy
import pytest

from whyalive.graph.heap import user_freeze_count


def make_cycle():
    holder = [numpy.zeros(1000)]
    holder.append(holder)


def test_unmarked_leak_is_not_checked():
    make_cycle()
    assert gc.get_debug() == 0
    assert user_freeze_count() == 0
    assert gc.callbacks == []


@pytest.mark.whyalive
def test_marked_leak_is_checked():
    make_cycle()
"""


def test_inert_without_the_flag_and_marker_checks_one_test(pytester: pytest.Pytester) -> None:
    """Without --whyalive nothing is checked and gc is untouched; the marker checks one test."""
    pytester.makepyfile(test_inert=INERT)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*Leak found in the call of test_inert.py::test_marked_leak_is_checked:"]
    )


def test_ini_twin_warn_mode_and_report_directory(pytester: pytest.Pytester) -> None:
    """`whyalive = true` in the ini, --whyalive-on-leak=warn and --whyalive-report=DIR."""
    pytester.makeini("[pytest]\nwhyalive = true\nwhyalive_report = leak-reports\n")
    pytester.makepyfile(
        test_warned="""
        import numpy

        def test_leaks():
            state = {"intermediates": [numpy.zeros(64)]}
            state["self"] = state
        """
    )
    result = pytester.runpytest_subprocess("--whyalive-on-leak=warn", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["whyalive: checking every test (min_bytes=0, on_leak=warn)"])
    result.stdout.fnmatch_lines(
        ["*LeakWarning: whyalive: 512 B, cut dict[[]'self'[]] at * (self-containing-container)"]
    )
    (written,) = (pytester.path / "leak-reports").glob("*.json")
    report = Report.load(written)
    assert report.total_bytes == 64 * 8
    assert report.cycles[0].pattern == "self-containing-container"
    assert json.loads(written.read_text())["schema_version"] == report.schema_version


def test_min_bytes_option_hides_small_leaks(pytester: pytest.Pytester) -> None:
    """--whyalive-min-bytes raises the threshold for every test."""
    pytester.makepyfile(
        test_small="""
        import numpy

        def test_small_leak():
            holder = [numpy.zeros(10)]
            holder.append(holder)
        """
    )
    result = pytester.runpytest_subprocess(
        "--whyalive", "--whyalive-min-bytes=1000", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)


def test_a_leak_in_every_collection_of_a_loop_is_one_explanation(
    pytester: pytest.Pytester,
) -> None:
    """A test body whose loop leaks before each of 30 collections fails with the leak
    explained once, its 30 occurrences and bytes summed, in one report file."""
    pytester.makepyfile(
        test_loop="""
        import gc

        def make():
            holder = {"buffer": bytearray(2 << 20)}
            holder["me"] = holder

        def test_loop():
            for _ in range(30):
                make()
                gc.collect()
        """
    )
    result = pytester.runpytest_subprocess(
        "--whyalive", "--whyalive-report=reports", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=1)
    # The failure section (with CI set, pytest's short summary repeats the whole message).
    text = result.stdout.str().split("short test summary info")[0]
    assert text.count("Leak found in the call of test_loop.py::test_loop") == 1
    assert text.count("Cycle 1: container that contains itself") == 1
    assert "30 reference cycles (1 signature) keep 30 bytearrays alive" in text
    assert "60.0 MiB, 30\n  occurrences" in text or "60.0 MiB, 30 occurrences" in text
    (written,) = (pytester.path / "reports").glob("*.json")
    (cycle,) = json.loads(written.read_text())["cycles"]
    assert cycle["occurrences"] == 30
    assert cycle["total_bytes"] == 30 * (2 << 20)
    assert cycle["members"]


def test_help_lists_options_with_ini_twins(pytester: pytest.Pytester) -> None:
    """--help shows every --whyalive option and its ini twin with the same help text."""
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "*whyalive: reference cycles that hold tensors*",
            "*--whyalive *check every test for heavy objects*",
            "*--whyalive-min-bytes=SIZE*",
            "*--whyalive-on-leak=*",
            "*--whyalive-report=DIR*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*whyalive (bool):*check every test*", "*whyalive_min_bytes (string):*", "*report only*"]
    )


def test_markers_are_listed(pytester: pytest.Pytester) -> None:
    """--markers lists the whyalive and whyalive_skip markers."""
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(
        ["@pytest.mark.whyalive(min_bytes=0*", "@pytest.mark.whyalive_skip*"]
    )


@needs_torch_installed
def test_xdist_workers_check_themselves_and_torch_leaks_are_named(
    pytester: pytest.Pytester,
) -> None:
    """With -n 2 each worker checks its tests, and the controller's summary lists the leaks."""
    pytest.importorskip("xdist")
    pytester.makepyfile(
        test_dist="""
        import numpy
        import pytest
        import torch

        class Trainer:
            def __init__(self):
                self.buffer = torch.zeros(256)
                self.callback = self.on_step

            def on_step(self):
                pass

        def test_torch_bound_method():
            Trainer()

        @pytest.mark.parametrize("n", range(6))
        def test_clean(n):
            assert numpy.zeros(n).sum() == 0
        """
    )
    result = pytester.runpytest_subprocess("--whyalive", "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*bound-method-on-self*",
            "1 cycle signature left heavy objects in cyclic garbage:",
            "  * bound-method-on-self: 1.0 KiB in 1 test (failing)",
            "      test_dist.py::test_torch_bound_method [call]: 1.0 KiB",
        ]
    )


SIZES = """
import numpy
import pytest


def leak(nbytes):
    box = [numpy.zeros(nbytes // 8)]
    box.append(box)


def test_small():
    leak(4096)


def test_big():
    leak(4 << 20)


@pytest.mark.whyalive(min_bytes="1 KiB")
def test_marked_small():
    leak(4096)
"""


@pytest.mark.parametrize(
    ("args", "ini"),
    [
        (("--whyalive-min-bytes=1MB",), ""),
        (("--whyalive-min-bytes", "1 MiB"), ""),
        (("--whyalive-min-bytes=1048576",), ""),
        ((), "whyalive_min_bytes = 1MiB"),
    ],
    ids=["1MB", "1 MiB", "bytes", "ini"],
)
def test_min_bytes_takes_sizes_with_units(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str
) -> None:
    """`--whyalive-min-bytes=1MB`, `1 MiB`, `1048576` or the ini twin: only the 4 MiB leak
    fails; a marker's `min_bytes="1 KiB"` is a size too."""
    pytester.makepyfile(test_sizes=SIZES)
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest_subprocess("--whyalive", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["whyalive: checking every test (min_bytes=1048576, *"])
    result.stdout.fnmatch_lines(["FAILED test_sizes.py::test_big - whyalive: 4.0 MiB*"])
    result.stdout.fnmatch_lines(["FAILED test_sizes.py::test_marked_small - *"])


@pytest.mark.parametrize("size", ["1 XB", "-1", "lots"])
def test_a_bad_size_is_a_one_line_usage_error(pytester: pytest.Pytester, size: str) -> None:
    """A size that is not one stops the run with one line naming the option and the forms."""
    pytester.makepyfile(test_sizes=SIZES)
    result = pytester.runpytest_subprocess(
        "--whyalive", f"--whyalive-min-bytes={size}", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: whyalive_min_bytes must be a size such as 1048576, 1MB or 1.5 MiB*"]
    )
    assert "Traceback" not in result.stderr.str()


CACHE_LEAK = """
import numpy


class Cache:
    def __init__(self):
        self.data = numpy.zeros(1 << 18)
        self.cb = self.on_step

    def on_step(self):
        return self.data


def test_cache_leaks():
    Cache()
"""


@pytest.mark.parametrize("columns", [80, 200])
def test_the_failed_line_leads_with_bytes_and_cut(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """The short summary's FAILED line, cut by pytest at the terminal's width, keeps the
    bytes and the reference to cut at 80 columns (no `Failed:` before them); a wide
    terminal shows where and the pattern too. The failure itself has no traceback."""
    for ci in ("CI", "BUILD_NUMBER"):  # on CI pytest does not cut the line at all
        monkeypatch.delenv(ci, raising=False)
    monkeypatch.setenv("COLUMNS", str(columns))
    pytester.makepyfile(test_model=CACHE_LEAK)
    result = pytester.runpytest_subprocess("--whyalive", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    [line] = [x for x in result.stdout.lines if x.startswith("FAILED ")]
    assert len(line) <= columns
    head = "FAILED test_model.py::test_cache_leaks - whyalive: 2.0 MiB, cut Cache.cb at "
    if columns == 80:
        assert line.startswith(head), line
    else:
        assert line == f"{head}test_model.py:7 (bound-method-on-self)"
    result.stdout.fnmatch_lines(
        [
            "_* test_cache_leaks _*",
            "whyalive: 2.0 MiB, cut Cache.cb at test_model.py:7 (bound-method-on-self)",
            "Leak found in the call of test_model.py::test_cache_leaks:",
        ],
        consecutive=True,
    )
    assert "Traceback" not in result.stdout.str()


BAD_MARKERS = """
import pytest


@pytest.fixture
def resource():
    yield "opened"
    print("resource closed")


@pytest.mark.whyalive(min_bytes="lots")
def test_bad_size(resource):
    pass


@pytest.mark.whyalive(on_leak="explode")
def test_bad_on_leak():
    pass


@pytest.mark.whyalive(min_bytes="2 KiB")
def test_good_marker():
    pass


def test_unmarked():
    pass
"""


def test_a_bad_marker_errors_that_test_in_one_line(pytester: pytest.Pytester) -> None:
    """`whyalive(min_bytes="lots")` or a bad `on_leak`: that test errors at setup with one
    line naming the argument and the value, no traceback, no second error at teardown; its
    fixtures are torn down and the other tests run."""
    pytester.makepyfile(test_markers=BAD_MARKERS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", "-s")
    result.assert_outcomes(passed=2, errors=2)
    out = result.stdout.str()
    assert "Traceback" not in out
    assert "KeyError" not in out
    assert "ERROR at teardown" not in out
    assert out.count("resource closed") == 1
    result.stdout.fnmatch_lines(
        [
            "_* ERROR at setup of test_bad_size _*",
            "whyalive marker: min_bytes='lots' is not a size (use 1048576, 1MB or 1.5 MiB)",
            "_* ERROR at setup of test_bad_on_leak _*",
            "whyalive marker: on_leak='explode' is not 'fail' or 'warn'",
            "=* PASSES =*",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(
        [
            "ERROR test_markers.py::test_bad_size - Failed: whyalive marker: min_bytes='lots'*",
            "ERROR test_markers.py::test_bad_on_leak - Failed: whyalive marker: on_leak=*",
        ]
    )


IDIOMS = """
import numpy
import pytest


@pytest.mark.parametrize("n", range(7))
def test_raises(n):
    payload = numpy.zeros(1000 + n)
    with pytest.raises(ValueError) as excinfo:
        raise ValueError(payload)


@pytest.mark.parametrize("kind", [ValueError, TypeError])
def test_other(kind):
    payload = numpy.zeros(500)
    with pytest.raises(kind) as excinfo:
        raise kind(payload)
"""


def test_listed_findings_fold_parametrised_cases_and_are_written(
    pytester: pytest.Pytester,
) -> None:
    """Nine parametrised cases of harmless idioms are two entries of the summary, their
    cases folded; --whyalive-report writes a report for each all the same."""
    pytester.makepyfile(test_idioms=IDIOMS)
    result = pytester.runpytest_subprocess(
        "--whyalive", "--whyalive-report=reports", "-p", "no:cacheprovider", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=9)
    section = result.stdout.str().split("= whyalive =")[-1]
    said = " ".join(section.split())
    assert "in 7 tests (listed, not failing: pytest idiom, dies with the test)" in said
    assert "test_idioms.py::test_raises[0, 1, 2, ... 4 more]" in said
    assert "test_idioms.py::test_other[ValueError, TypeError]" in said
    assert said.count("pytest-idiom") == 2
    assert "9 reports written to reports (JSON and HTML)" in said
    written = sorted((pytester.path / "reports").glob("*.json"))
    assert len(written) == 9
    report = Report.load(written[0])
    assert [c.pattern for c in report.cycles] == ["pytest-idiom"]
    assert (pytester.path / "reports" / written[0].with_suffix(".html").name).exists()


TORCH_IDIOM = """
import pytest
import torch


def check_input(x):
    raise ValueError("no")


@pytest.mark.parametrize("n", range(7))
def test_raises(n):
    x = torch.zeros(256, 1024)
    with pytest.raises(ValueError) as excinfo:
        check_input(x)
    assert "no" in str(excinfo.value)
"""


@needs_torch_installed
def test_a_summary_of_only_listed_findings_opens_with_its_own_line(
    pytester: pytest.Pytester,
) -> None:
    """When nothing fails, the section still opens with a line that says what follows (as
    pytest-memray's entries each do), not with an indented signature entry; the held-by-C++
    group opens its own way."""
    pytester.makepyfile(test_idiom=TORCH_IDIOM)
    result = pytester.runpytest_subprocess(
        "--whyalive", "-p", "no:cacheprovider", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=7)
    section = result.stdout.str().split("= whyalive =")[-1].splitlines()[1:]
    assert section[0] == "1 cycle signature listed, not failing (each says why):", section
    assert section[1].startswith("  "), section
    assert "pytest-idiom" in section[1], section
    assert "in 7 tests (listed, not failing: pytest idiom" in " ".join(" ".join(section).split())
    assert "left heavy objects in cyclic garbage:" not in result.stdout.str()
    # Failing and listed together: each group under its own opening line, failing first.
    pytester.makepyfile(test_idioms=IDIOMS, test_leak=LEAKS_ONE)
    files = ("test_idioms.py", "test_leak.py")
    result = pytester.runpytest_subprocess(
        "--whyalive", "-p", "no:cacheprovider", "-p", "no:randomly", *files
    )
    result.assert_outcomes(passed=9, failed=1)
    opening = [
        line
        for line in result.stdout.str().split("= whyalive =")[-1].splitlines()[1:]
        if line and not line.startswith(" ")
    ]
    assert opening[:2] == [
        "1 cycle signature left heavy objects in cyclic garbage:",
        "3 cycle signatures listed, not failing (each says why):",  # test_other's are 2
    ], opening


LEAKS_ONE = """
import numpy


def test_recursive_closure():
    data = numpy.zeros(4096)

    def walk(n):
        return data if n == 0 else walk(n - 1)

    walk(2)
"""
