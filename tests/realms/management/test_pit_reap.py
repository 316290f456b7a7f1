"""``manage.py pit_reap [--dry-run]``: remove sandboxes no live realm owns."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from realms.forge import procs
from realms.models import Realm
from tests.realms.forge.conftest import forge_settings, make_realm, script_request, start

# The forge tests' fixtures: the sandbox settings (autouse there) and launched realms.
__all__ = ["forge_settings", "make_realm"]
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(60),
    pytest.mark.usefixtures("forge_settings"),
]

SLEEPER = "import time; time.sleep(300)"


def test_pit_reap_command(make_realm):
    realm = make_realm()
    rows = start(realm.realm_id, [script_request("alpha", SLEEPER)])
    Realm.objects.filter(pk=realm.pk).update(state=Realm.State.FAILED)
    out = io.StringIO()
    call_command("pit_reap", "--dry-run", stdout=out)
    assert f"would remove sandbox: realm={realm.realm_id} agent=alpha" in out.getvalue()
    assert procs.is_same_process(rows[0].pid, rows[0].pid_start_time)
    out = io.StringIO()
    call_command("pit_reap", stdout=out)
    assert f"removed sandbox: realm={realm.realm_id} agent=alpha" in out.getvalue()
    assert not procs.is_same_process(rows[0].pid, rows[0].pid_start_time)
