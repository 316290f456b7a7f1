"""The realm page of a long realm: the newest messages rendered, older ones a window at a
time, agent text escaped, and only for the operator."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from chronicle.kinds import Kind, Lifecycle
from chronicle.models import Message
from chronicle.services import record_event
from realms.console.realm_page import WINDOW

pytestmark = pytest.mark.django_db

REALM = "long-r1"
ROOM = "!commons:x"


@pytest.fixture
def operator() -> Client:
    user = get_user_model().objects.create_user(username="op", is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(user)
    return client


def _realm(messages: int) -> None:
    record_event(REALM, Kind.LIFECYCLE, {"event": Lifecycle.RUNNING, "commons_room": ROOM})
    Message.objects.bulk_create(
        Message(
            realm_id=REALM,
            channel=ROOM,
            sender="@bp-a:x",
            sender_agent="a",
            body=f"message {i}",
            ts_ms=1_000 + i,
            matrix_event_id=f"$e{i}",
        )
        for i in range(messages)
    )


def _event_ids(html: str) -> list[str]:
    return re.findall(r'data-event-id="([^"]+)"', html)


def test_the_page_renders_the_newest_window_and_pages_back_to_the_first(operator: Client) -> None:
    _realm(WINDOW * 2 + 10)
    html = operator.get(f"/realms/{REALM}/").content.decode()
    shown = _event_ids(html)
    assert shown == [f"$e{i}" for i in range(WINDOW + 10, WINDOW * 2 + 10)]
    seen = list(shown)
    while (found := re.search(r'\?before=([0-9.]+)"', html)) is not None:
        html = operator.get(f"/realms/{REALM}/messages?before={found.group(1)}").content.decode()
        seen = _event_ids(html) + seen
    assert seen == [f"$e{i}" for i in range(WINDOW * 2 + 10)]


def test_agent_text_is_escaped(operator: Client) -> None:
    record_event(REALM, Kind.LIFECYCLE, {"event": Lifecycle.RUNNING, "commons_room": ROOM})
    Message.objects.create(
        realm_id=REALM,
        channel=ROOM,
        sender="@bp-a:x",
        sender_agent="a",
        body="<script>alert(1)</script>",
        matrix_event_id="$x",
    )
    html = operator.get(f"/realms/{REALM}/").content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_bad_cursor_is_refused_and_names_itself(operator: Client) -> None:
    _realm(3)
    response = operator.get(f"/realms/{REALM}/messages?before=soon")
    assert response.status_code == 400
    assert response.content.decode().startswith("before: expected <ts_ms>.<id>")


def test_only_the_operator_sees_a_realm(operator: Client) -> None:
    _realm(3)
    assert Client().get(f"/realms/{REALM}/").status_code == 403
    assert Client().get(f"/realms/{REALM}/messages?before=1.1").status_code == 403
    assert operator.get("/realms/nothing-here/").status_code == 404
