"""What cannot be refused is still stored safely, and the realm's pages keep working.

Values that reach the Chronicle from outside a boundary that can say no (a sandbox's
run_code output, an agent runtime's trace) go through ``record_event``, which escapes
what no database can keep and notes where. Checked on SQLite and on PostgreSQL, whose
JSON type refuses a NUL outright.
"""

from __future__ import annotations

import json

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.services import record_event
from chronicle.traces import ingest_trace
from chronicle.values import MAX_DEPTH, BadValue, check_value, make_storable
from tests.fixtures.postgres import last_line_of, migrated_env

pytestmark = [pytest.mark.timeout(60)]

TOKEN = "test-operator-token-values-0123"
BAD = {
    "text": "a\x00b",
    "lone": "x\ud800y",
    "n": float("nan"),
    "huge": 10**30,
    "list": [1, "ok", "\udfff"],
    "k\x00ey": 1,
}


def _deep(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_make_storable_escapes_and_says_where():
    fixed, changed = make_storable(BAD, "payload")
    assert fixed["text"] == "a\\u0000b"
    assert fixed["lone"] == "x\\ud800y"
    assert fixed["n"] == "NaN"
    assert fixed["huge"] == str(10**30)
    assert fixed["list"] == [1, "ok", "\\udfff"]
    assert fixed["k\\u0000ey"] == 1
    assert sorted(changed) == sorted(
        [
            "payload.text",
            "payload.lone",
            "payload.n",
            "payload.huge",
            "payload.list[2]",
            "payload['k\\\\u0000ey']",
        ]
    )
    check_value(fixed, max_bytes=None)


def test_check_value_is_iterative_and_names_the_place():
    with pytest.raises(BadValue, match=r"^v\[0\]\[0\].*: nested deeper than"):
        check_value(_deep(100_000), "v", max_bytes=None)
    with pytest.raises(BadValue, match=r"^v\.a\[1\]: contains a NUL"):
        check_value({"a": ["ok", "no\x00"]}, "v")


@pytest.mark.django_db
def test_record_event_stores_unstorable_values_escaped(client, settings):
    settings.BEARPIT_API_TOKEN = TOKEN
    event = record_event("r-bad", Kind.EXEC_RESULT, {"output": "\x00\ud800", "deep": _deep(500)})
    stored = Event.objects.get(pk=event.pk).payload
    assert stored["output"] == "\\u0000\\ud800"
    assert isinstance(stored["deep"], list)
    assert sorted(stored["escaped_fields"])[0] == "payload.deep" + "[0]" * (MAX_DEPTH - 1)
    page = client.get("/api/realms/r-bad/events", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert page.status_code == 200
    assert page.json()["events"][0]["payload"]["output"] == "\\u0000\\ud800"


PG_SCRIPT = """
import json
import django
django.setup()
from chronicle.models import Event
from chronicle.services import record_event
event = record_event("r-pg", "exec_result", {"output": "a\\x00b\\ud800", "n": float("inf")})
print(json.dumps(Event.objects.get(pk=event.pk).payload))
"""


@pytest.mark.postgres
def test_record_event_keeps_unstorable_values_on_postgres(tmp_path):
    with migrated_env(tmp_path / "home", "values") as env:
        stored = json.loads(last_line_of(PG_SCRIPT, env))
    assert stored == {
        "output": "a\\u0000b\\ud800",
        "n": "Infinity",
        "escaped_fields": ["payload.output", "payload.n"],
    }


@pytest.mark.django_db
def test_a_trace_with_bad_characters_or_deep_lines_is_ingested_without_breaking(tmp_path):
    path = tmp_path / "trace.jsonl"
    lines = [
        json.dumps({"seq": 1, "run_id": "r", "type": "note", "data": {"t": "PLACEHOLDER"}}).replace(
            "PLACEHOLDER", "a\\u0000b\\ud800"
        ),
        json.dumps({"seq": 2, "run_id": "r", "type": "deep", "data": _deep(500)}),
        '{"seq": 3, "run_id": "r", "type": "deeper", "data": '
        + "[" * 100_000
        + "]" * 100_000
        + "}",
        json.dumps({"seq": 4, "run_id": "r", "type": "after"}),
    ]
    path.write_text("\n".join(lines) + "\n")
    assert ingest_trace("r-trace", "pong", path) == 3
    rows = [e.payload for e in Event.objects.filter(realm_id="r-trace").order_by("id")]
    assert [r["seq"] for r in rows] == [1, 2, 4]
    assert rows[0]["data"]["t"] == "a\\u0000b\\ud800"
    assert rows[0]["escaped_fields"] == ["payload.data.t"]
    assert ingest_trace("r-trace", "pong", path) == 0


@pytest.mark.django_db
def test_a_value_that_is_not_json_at_all_is_still_a_bug_that_raises():
    from decimal import Decimal

    from django.db import transaction

    with pytest.raises(TypeError), transaction.atomic():
        record_event("r-bug", Kind.SCORE, {"delta": Decimal("1.5")})
    assert not Event.objects.filter(realm_id="r-bug").exists()
