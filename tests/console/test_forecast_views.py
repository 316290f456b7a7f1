"""The forecast beside the launch form, through Django's test client: the partial the
form fetches (htmx) for the values as filled in, the same numbers ``pit_forecast``
gives, a value the package refuses named instead of a forecast, and nothing launched."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from ledger.services.profiles import seed_profiles
from realms.forecast.estimate import forecast
from realms.library import services as library
from realms.models import Realm
from realms.services.launch import LaunchOptions

pytestmark = [pytest.mark.timeout(90), pytest.mark.django_db]

PACKAGE = Path(__file__).resolve().parents[1] / "realms" / "batch" / "packages" / "two-endings"
URL = "/scenarios/two-endings/forecast"


@pytest.fixture
def scenario(settings, tmp_path) -> Path:
    settings.BEARPIT_HOME = tmp_path / "home"
    seed_profiles()
    return library.materialize(library.import_folder(PACKAGE))


def test_the_form_fetches_the_forecast_of_its_values(operator, scenario):
    form = operator.get("/scenarios/two-endings/launch").content.decode()
    assert f'hx-post="{URL}"' in form and 'hx-include="#launch-form"' in form

    answer = operator.post(URL, {"param-ending": "win", "provider": "offline"})
    assert answer.status_code == 200, answer.content.decode()
    page = answer.content.decode()
    expected = forecast(scenario, LaunchOptions(parameters={"ending": "win"}, provider="offline"))
    (alice,) = expected.agents
    assert "<html" not in page
    assert f"{alice.first_request_tokens} tokens, {len(alice.tools)} tools" in page, page
    assert "$0.50" in page  # alice's cap, beside her range
    assert expected.binds_first in page.replace("&#x27;", "'")
    assert "6s" in page  # the package's time limit
    assert Realm.objects.count() == 0


def test_a_refused_value_is_named_and_no_forecast_is_made(operator, scenario):
    answer = operator.post(URL, {"param-ending": "draw"})
    assert answer.status_code == 400
    page = answer.content.decode()
    assert "ending" in page and "draw" in page and "forecast waits" in page
    unknown = operator.post(URL, {"param-ending": "win", "provider": "nonesuch"})
    assert unknown.status_code == 400 and "nonesuch" in unknown.content.decode()
    assert Realm.objects.count() == 0


def test_only_the_operator_and_only_post(operator, scenario):
    assert Client().post(URL, {"param-ending": "win"}).status_code == 403
    assert operator.get(URL).status_code == 405
    assert operator.post("/scenarios/no-such-thing/forecast", {}).status_code == 404
