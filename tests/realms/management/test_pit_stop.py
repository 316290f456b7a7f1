"""``manage.py pit_stop REALM``: ask the realm's worker to conclude it."""

from __future__ import annotations

import pytest

from realms.models import Realm

from .cli import REALM, build, run

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db, pytest.mark.usefixtures("cli_home")]


def test_stop_sets_the_rows_flag():
    build()
    out = run("pit_stop", REALM)
    assert "stop requested" in out
    assert Realm.objects.get(realm_id=REALM).stop_requested
