"""The reference corpus is optional: the suite finds it through BEARPIT_COMPAT_DIR only."""

from __future__ import annotations

import pytest

from .run import clean_env, run_pytest

pytestmark = pytest.mark.timeout(180)

COMPAT_TESTS = "tests/realms/packages/test_compat.py"


def test_without_the_variable_the_compat_tests_are_left_out_and_the_summary_says_so():
    result = run_pytest(["-p", "no:randomly", COMPAT_TESTS], clean_env())
    out = result.stdout + result.stderr
    # Everything in the file needs the corpus, so nothing is left to run (exit 5).
    assert result.returncode == 5, out
    assert "deselected" in out
    assert "compat: " in out and "compatibility tests not collected" in out
    assert "BEARPIT_COMPAT_DIR is not set" in out


def test_a_variable_naming_no_folder_stops_the_run(tmp_path):
    missing = tmp_path / "nowhere"
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = clean_env(BEARPIT_COMPAT_DIR=str(missing), TMPDIR=str(temp))
    result = run_pytest(["-p", "no:randomly", "--co", COMPAT_TESTS], env)
    assert result.returncode == 4, result.stdout + result.stderr
    assert f"BEARPIT_COMPAT_DIR={missing}: not a directory" in result.stderr
    # The throw-away home the test settings made is gone, though no session ran.
    assert not list(temp.glob("bearpit-test-home-*"))
