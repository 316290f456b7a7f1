"""Without a PostgreSQL server only the tests that need one fail, each saying how to get one."""

from __future__ import annotations

import re
import socket

import pytest

from .run import clean_env, run_pytest

pytestmark = pytest.mark.timeout(180)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_other_database_tests_still_pass():
    url = f"postgres://postgres@127.0.0.1:{closed_port()}/bearpit"
    result = run_pytest(
        ["-p", "no:randomly", "-n", "0", "tests/chronicle/test_append_only.py"],
        clean_env(BEARPIT_TEST_POSTGRES_URL=url),
    )
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    # Exactly the PostgreSQL tests error, and every other test of the file passes.
    summary = re.search(r"(\d+) passed, (\d+) errors? in", out)
    assert summary, out
    errors = sorted(re.findall(r"^ERROR (\S+)", out, re.M))
    assert errors == [
        "tests/chronicle/test_append_only.py::test_postgres_refuses_upserts_through_the_orm_and_raw",
        "tests/chronicle/test_append_only.py::test_postgres_trigger_refuses_raw_updates_and_deletes",
    ], out
    assert int(summary.group(2)) == len(errors)
    assert int(summary.group(1)) >= 10
    assert (
        f"PostgreSQL does not answer at {url}: run scripts/test (it starts a throw-away "
        "server) or point BEARPIT_TEST_POSTGRES_URL at one"
    ) in out
