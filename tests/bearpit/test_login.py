"""One operator identity: the bootstrap URL starts a Django session, which the admin and
the API both take; a browser's cookies never write without CSRF, from a foreign origin or
for a host the platform does not serve. (Every ``/api/`` route, method by method:
``test_auth_matrix.py``.)"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

TOKEN = "test-operator-token-session-0123456789"


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path
    settings.BEARPIT_API_TOKEN = TOKEN


@pytest.fixture
def browser() -> Client:
    """A client that checks CSRF as a real browser request is checked."""
    return Client(enforce_csrf_checks=True)


def log_in(client: Client) -> None:
    response = client.get(f"/login?token={TOKEN}")
    assert response.status_code == 303


def test_the_bootstrap_url_starts_a_strict_httponly_session_and_drops_the_token(browser):
    assert not User.objects.filter(username="operator").exists()
    response = browser.get(f"/login?token={TOKEN}")
    assert response.status_code == 303
    assert TOKEN not in response["Location"]
    session = response.cookies["sessionid"]
    assert session["httponly"] is True
    assert session["samesite"] == "Strict"
    operator = User.objects.get(username="operator")
    assert operator.is_superuser and operator.is_staff
    assert not operator.has_usable_password()
    landed = browser.get(response["Location"])
    assert response["Location"] == "/"
    assert landed.status_code == 200
    assert b"Bearpit" in landed.content and b"Sign in" not in landed.content


def test_the_session_opens_the_admin_and_the_api(browser):
    log_in(browser)
    assert browser.get("/admin/").status_code == 200
    assert browser.get("/api/realms").status_code == 200


def test_a_second_login_is_the_same_operator(browser):
    log_in(browser)
    log_in(Client(enforce_csrf_checks=True))
    assert User.objects.filter(is_superuser=True).count() == 1


def test_a_wrong_token_starts_no_session(browser):
    response = browser.get("/login?token=nope")
    assert response.status_code == 401
    assert "sessionid" not in response.cookies
    assert browser.get("/admin/").status_code == 302
    assert browser.get("/api/realms").status_code == 401


def test_home_tells_an_anonymous_visitor_how_to_log_in(browser):
    response = browser.get("/")
    assert response.status_code == 403
    page = response.content.decode()
    assert "pit serve" in page and "--print-url" in page and "/login?token=" in page
    assert TOKEN not in page


def test_a_staff_user_who_is_not_the_operator_gets_no_api(browser):
    User.objects.create_user("visitor", password="pw-visitor", is_staff=True)
    assert browser.login(username="visitor", password="pw-visitor")
    assert browser.get("/api/realms").status_code == 401


def test_a_write_without_the_csrf_token_is_refused(browser):
    log_in(browser)
    refused = browser.post("/api/realms/nope/stop")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    # The same write with the token from the CSRF cookie gets as far as the view.
    csrf = browser.cookies["csrftoken"].value
    allowed = browser.post("/api/realms/nope/stop", HTTP_X_CSRFTOKEN=csrf)
    assert allowed.status_code == 404


def test_an_admin_write_without_the_csrf_token_is_refused(browser):
    log_in(browser)
    response = browser.post("/admin/logout/")
    assert response.status_code == 403
    assert browser.get("/admin/").status_code == 200


def test_a_write_from_a_foreign_origin_is_refused(browser):
    log_in(browser)
    csrf = browser.cookies["csrftoken"].value
    api = browser.post(
        "/api/realms/nope/stop", HTTP_X_CSRFTOKEN=csrf, HTTP_ORIGIN="http://evil.example"
    )
    assert api.status_code == 403
    admin = browser.post(
        "/admin/logout/", {"csrfmiddlewaretoken": csrf}, HTTP_ORIGIN="http://evil.example"
    )
    assert admin.status_code == 403
    assert browser.get("/admin/").status_code == 200


def test_scripts_keep_the_bearer_token_without_csrf(browser):
    response = browser.post("/api/realms/nope/stop", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 404


@pytest.mark.parametrize("path", ["/", "/health", "/api/realms", "/admin/"])
def test_a_host_not_allowed_is_a_400(browser, path):
    response = browser.get(path, HTTP_HOST="evil.example")
    assert response.status_code == 400
