"""CI's gate (tests/fixtures/gate.py): skips, xfails and a shrunken suite fail the run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .run import clean_env, run_pytest

pytestmark = pytest.mark.timeout(120)

# Only the two plugins under test, and xdist to run them as CI does: no plugin is
# autoloaded (Django's test settings would make a home, and hypothesis and the rest
# cost seconds an interpreter, which under a loaded suite ran past the timeout).
PLUGINS = [
    *("-p", "tests.fixtures.compat", "-p", "tests.fixtures.gate", "-p", "xdist.plugin"),
]


def session(tmp_path: Path, tests: str, floors: str, *extra: str, **env: str):
    """A pytest session of its own on ``tests`` in ``tmp_path``, with our two plugins."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(tests))
    (tmp_path / "min-tests").write_text(floors)
    args = [*PLUGINS, "--rootdir", str(tmp_path), "-c", str(tmp_path / "pytest.ini"), *extra]
    result = run_pytest(
        [*args, str(tmp_path)],
        clean_env(
            BEARPIT_TEST_FLOOR_FILE=str(tmp_path / "min-tests"),
            PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
            **env,
        ),
    )
    return result, result.stdout + result.stderr


SKIPPING = """
    import pytest

    def test_fine():
        pass

    def test_skipped():
        pytest.skip("no server here")
"""


def test_skips_xfails_and_a_short_suite_fail_the_run_under_ci(tmp_path):
    tests = """
        import pytest

        def test_fine():
            pass

        def test_skipped():
            pytest.skip("no server here")

        @pytest.mark.xfail(reason="known")
        def test_expected_to_fail():
            raise AssertionError

        @pytest.mark.xfail(reason="known")
        def test_unexpectedly_passes():
            pass
    """
    # Under xdist, as CI runs it: the controller judges what the workers report.
    result, out = session(tmp_path, tests, "# the floor\nsuite 5\n", "-n", "2", CI="true")
    assert result.returncode == 1, out
    assert "ci gate: this run fails" in out
    assert "skipped: test_sample.py::test_skipped (" in out and "no server here" in out
    assert "xfail/xpass: test_sample.py::test_expected_to_fail" in out
    assert "xfail/xpass: test_sample.py::test_unexpectedly_passes" in out
    assert "only 4 tests ran; the floor in .ci/min-tests is 5" in out
    # Outside CI the same run passes, and the gate says nothing.
    result, out = session(tmp_path, tests, "suite 5\n")
    assert result.returncode == 0, out
    assert "ci gate" not in out


def test_with_the_corpus_named_its_tests_must_have_run(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    tests = """
        import pytest

        def test_plain():
            pass

        @pytest.mark.compat
        def test_needs_the_corpus():
            pass
    """
    floors = "suite 1\ncompat 1\n"
    env = {"CI": "true", "BEARPIT_COMPAT_DIR": str(corpus)}
    result, out = session(tmp_path, tests, floors, "-k", "plain", **env)
    assert result.returncode == 1, out
    assert "only 0 compatibility tests ran with BEARPIT_COMPAT_DIR set" in out
    result, out = session(tmp_path, tests, floors, **env)
    assert result.returncode == 0, out
    assert "ci gate: 2 tests ran, none skipped, floors met" in out
    assert f"compat: reference corpus from {corpus}" in out


def test_a_malformed_floor_file_is_a_usage_error(tmp_path):
    result, out = session(tmp_path, SKIPPING, "suite many\n", CI="true")
    assert result.returncode != 0
    assert "expected 'suite N' or 'compat N'" in out
