"""The operator token never travels in a URL except once, to the bootstrap ``/login``.

Access logs (uvicorn, daphne) record every URL, so ``?token=`` anywhere else is refused;
``/login?token=…`` trades it for the operator's session (an HttpOnly, SameSite=Strict
cookie that holds no token) and a 303 to a clean URL. Scripts keep using
``Authorization: Bearer``.
"""

from __future__ import annotations

import pytest

from bearpit import auth

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

TOKEN = "test-operator-token-login-0123456789"


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.BEARPIT_API_TOKEN = TOKEN


def test_login_sets_a_strict_httponly_session_and_redirects_to_a_clean_url(client):
    response = client.get(f"/login?token={TOKEN}&next=/api/packages")
    assert response.status_code == 303
    assert response["Location"] == "/api/packages"
    cookie = response.cookies["sessionid"]
    assert cookie["httponly"] is True
    assert cookie["samesite"] == "Strict"
    # The browser keeps a session, never the token itself.
    assert all(TOKEN not in morsel.OutputString() for morsel in response.cookies.values())
    assert response["Cache-Control"] == "no-store"
    assert response["Referrer-Policy"] == "no-referrer"
    followed = client.get(response["Location"])
    assert followed.status_code == 200


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/",
        "//evil.example/x",
        "/api/realms?token=" + TOKEN,
        "javascript:alert(1)",
    ],
)
def test_login_only_redirects_to_a_clean_local_path(client, target):
    response = client.get("/login", {"token": TOKEN, "next": target})
    assert response.status_code == 303
    assert response["Location"] == auth.LOGIN_DEFAULT_NEXT
    assert TOKEN not in response["Location"]


def test_a_wrong_or_missing_token_at_login_sets_nothing(client):
    wrong = client.get("/login?token=nope")
    assert wrong.status_code == 401
    assert "sessionid" not in wrong.cookies
    assert "invalid" in wrong.json()["error"]
    missing = client.get("/login")
    assert missing.status_code == 400
    assert "sessionid" not in missing.cookies


@pytest.mark.parametrize(
    "path", ["/api/realms", "/api/packages", "/api/realms/x/events", "/health"]
)
def test_every_other_route_refuses_a_token_in_the_url(client, path):
    response = client.get(f"{path}?token={TOKEN}")
    assert response.status_code == 400
    message = response.json()["error"]
    assert "/login" in message and "Authorization: Bearer" in message
    assert TOKEN not in response.content.decode()
    # Even with a good header: the URL already leaked it into a log.
    also = client.get(f"{path}?token={TOKEN}", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert also.status_code == 400


def test_a_token_in_the_url_of_a_write_is_refused_and_changes_nothing(client):
    response = client.post(f"/api/realms/x/stop?token={TOKEN}")
    assert response.status_code == 400


def test_bearer_and_session_keep_working_and_a_token_cookie_is_no_way_in(client):
    assert client.get("/api/realms", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    # The old token cookie is not read any more: the session replaced it.
    client.cookies["bearpit_token"] = TOKEN
    assert client.get("/api/realms").status_code == 401
    assert client.get(f"/login?token={TOKEN}").status_code == 303
    assert client.get("/api/realms").status_code == 200
