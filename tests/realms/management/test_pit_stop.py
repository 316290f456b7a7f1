"""``manage.py pit_stop REALM``: ask the realm's worker to conclude it."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

from realms.models import Realm

from .cli import REALM, build, run

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"


def test_an_unknown_realm_is_a_clear_error():
    with pytest.raises(CommandError, match="'ghost-000000': no such realm"):
        run("pit_stop", "ghost-000000")


def test_stop_sets_the_rows_flag():
    build()
    out = run("pit_stop", REALM)
    assert "stop requested" in out
    assert Realm.objects.get(realm_id=REALM).stop_requested
