"""The application-service endpoints take the hs_token from the Authorization header only."""

from __future__ import annotations

import logging

import httpx
import pytest

from realms.herald.config import load_registration

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def test_the_hs_token_is_accepted_only_in_the_header(platform_server):
    token = load_registration().hs_token
    base = f"{platform_server.url}/_matrix/app/v1"
    calls: tuple[tuple[str, str, dict[str, list[object]] | None], ...] = (
        ("PUT", "/transactions/q1", {"events": []}),
        ("POST", "/ping", {}),
        ("GET", "/users/%40bp_nobody%3Ax", None),
    )
    for method, path, body in calls:
        # In the query string it would land in access logs: refused, as if it were absent.
        in_query = httpx.request(method, base + path, params={"access_token": token}, json=body)
        assert in_query.status_code == 401, (path, in_query.text)
        assert in_query.json()["errcode"] == "M_UNAUTHORIZED"
        headers = {"Authorization": f"Bearer {token}"}
        in_header = httpx.request(method, base + path, headers=headers, json=body)
        assert in_header.status_code == (404 if path.startswith("/users") else 200), in_header.text
        wrong = httpx.request(method, base + path, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 403


def test_the_homeserver_is_told_to_send_the_header_only(homeserver):
    import yaml

    config = yaml.safe_load(homeserver.config.config_path.read_text())
    assert config["use_appservice_legacy_authorization"] is False


def test_only_the_protocols_expected_misses_go_unlogged(platform_server, caplog):
    """A 404 for an alias or user the platform does not hold is the answer the homeserver
    expects; a refused token there, or a 404 elsewhere, is still a warning."""
    from django.test import Client

    client = Client(headers={"Authorization": f"Bearer {load_registration().hs_token}"})
    caplog.set_level(logging.WARNING, logger="django.request")
    for path in ("/rooms/%23bp_heartbeat%3Abearpit.local", "/users/%40bp_nobody%3Ax"):
        assert client.get(f"/_matrix/app/v1{path}").status_code == 404
    assert not [r for r in caplog.records if r.name == "django.request"], caplog.text

    wrong = Client(headers={"Authorization": "Bearer nope"})
    assert wrong.get("/_matrix/app/v1/rooms/%23x%3Ay").status_code == 403
    assert client.get("/_matrix/app/v1/nothing-here").status_code == 404
    warned = [r.getMessage() for r in caplog.records if r.name == "django.request"]
    assert warned == [
        "Forbidden: /_matrix/app/v1/rooms/#x:y",
        "Not Found: /_matrix/app/v1/nothing-here",
    ]
