"""Settings for the test run: the embedded default in a throw-away BEARPIT_HOME,
plus a ``postgres`` alias for the production-shaped tests.

The environment is set before ``bearpit.settings`` is read, and subprocesses the
tests start (commands, servers) inherit it.
"""

from __future__ import annotations

import os

from tests.fixtures import sqlitefile as _sqlitefile
from tests.fixtures import worker as _worker

# Its own BEARPIT_HOME and sandbox uid block per test process (pytest-xdist workers too).
_worker.isolate()
os.environ.setdefault("BEARPIT_SECRET_KEY", "test-secret-key-not-for-production-use-0123456789")

from bearpit import env as _env  # noqa: E402  (after the environment is set)
from bearpit.settings import *  # noqa: E402, F403

POSTGRES_URL = os.environ.get(
    "BEARPIT_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/bearpit"
)
_POSTGRES = _env.parse_database_url("BEARPIT_TEST_POSTGRES_URL", POSTGRES_URL)
# Without a server there is no "postgres" alias: the tests that need it fail on their own
# (tests/conftest.py says how to get one), and setting up the test databases of every
# other test does not fail with it.
POSTGRES_ANSWERS = _worker.answers(_POSTGRES.host or "127.0.0.1", int(_POSTGRES.port or 5432))
if POSTGRES_ANSWERS:
    DATABASES["postgres"] = {  # noqa: F405
        **_POSTGRES.django(),
        "TEST": {"NAME": "test_bearpit"},
    }
# A file, not ":memory:", so servers the tests start in threads or subprocesses
# (gateway, application-service endpoint, realmtools) see the same test database.
_TEST_DATABASE = str(BEARPIT_HOME / "test-db.sqlite3")  # noqa: F405
DATABASES["default"]["TEST"] = {"NAME": _TEST_DATABASE}  # noqa: F405
# Only SQLite opens that file in a test process (tests/fixtures/sqlitefile.py says why).
_sqlitefile.refuse_opening(_TEST_DATABASE)
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
