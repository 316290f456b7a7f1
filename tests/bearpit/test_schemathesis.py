"""Requests generated from the served OpenAPI document, sent to the app in-process.

Whatever schemathesis makes of each operation's parameters and body, the answer is never
a server error, and a documented answer has the documented shape. The run is bounded
(few examples per operation) and derandomized, so it is the same run every time.

No worker runs in this process (no broker, no ``pit serve``), so launching a realm
answers 503 and no sandbox is ever started; the test checks that no realm got past
``pending``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.schemas import BaseSchema
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from bearpit.wsgi import application
from chronicle.kinds import Kind
from chronicle.services import record_event
from realms.library import services as library
from realms.models import Realm

TOKEN = "test-operator-token-schemathesis-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api_schema(db, settings, tmp_path) -> Iterator[BaseSchema]:
    settings.BEARPIT_HOME = tmp_path
    settings.BEARPIT_SCENARIOS_DIR = tmp_path / "scenarios"
    settings.BEARPIT_API_TOKEN = TOKEN
    settings.BEARPIT_DOCKER_URL = f"unix://{tmp_path}/no-engine.sock"
    # The app runs in this thread, inside the test's transaction: Django must not close
    # the connection at the end of each request (its test client does the same).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/schema/?format=json", application, headers=AUTH)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


# Each operation gets its own bounded, derandomized run. (schemathesis's pytest
# integration names each case's test by setting a node attribute pytest 9 no longer
# has, so the operations are walked here instead.)
_PER_OPERATION = settings(
    max_examples=6,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
_CHECKS: list[Any] = [not_a_server_error, response_schema_conformance, content_type_conformance]


def explore(operation, mode: GenerationMode) -> None:
    """One bounded run of generated requests against one operation."""
    # Data that breaks the schema must be refused, never crash; the answer's conformance
    # is only checked for data that fits.
    checks: list[Any] = _CHECKS if mode == GenerationMode.POSITIVE else [not_a_server_error]

    @_PER_OPERATION
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case) -> None:
        case.call_and_validate(headers=AUTH, checks=checks)

    run()


@pytest.mark.timeout(120)
def test_no_generated_request_is_a_server_error(api_schema):
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 10, [o.label for o in operations]
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                explore(operation, mode)
            except (Exception, BaseExceptionGroup) as exc:  # schemathesis reports a group
                failures.append(f"{operation.label} ({mode}): {exc}")
    assert not Realm.objects.exclude(state=Realm.State.PENDING).exists()
    assert failures == [], "\n\n".join(failures)


# Generated path parameters name things that are not there (404). These name things that
# are, so the answers for a real realm and a real package are checked against the
# schema too.
_KNOWN = {"realm_id": "r-schema", "name": "toolcheck"}


def test_answers_about_things_that_exist_have_the_documented_shape(api_schema, realm_builder):
    realm_builder("r-schema", state=Realm.State.RUNNING)
    record_event("r-schema", Kind.LIFECYCLE, {"event": "running"})
    library.sync_examples()
    checked, failures = [], []
    for operation in (result.ok() for result in api_schema.get_all_operations()):
        names = {p.name for p in operation.path_parameters}
        if operation.method.upper() != "GET" or not names or not names <= set(_KNOWN):
            continue
        case = operation.Case(path_parameters={n: _KNOWN[n] for n in names})
        try:
            response = case.call_and_validate(headers=AUTH, checks=_CHECKS)
        except (Exception, BaseExceptionGroup) as exc:
            failures.append(f"{operation.label}: {exc}")
            continue
        if response.status_code != 200:
            failures.append(f"{operation.label}: {response.status_code} {response.text[:200]}")
        checked.append(operation.label)
    assert "GET /api/realms/{realm_id}" in checked and "GET /api/packages/{name}" in checked
    assert failures == [], "\n\n".join(failures)
