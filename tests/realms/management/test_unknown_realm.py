"""Every verb that names a realm refuses an unknown one the same way, changing nothing."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

from realms.models import Realm

from .cli import run

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db, pytest.mark.usefixtures("cli_home")]


@pytest.mark.parametrize(
    "argv",
    [
        ("pit_status", "ghost-000000"),
        ("pit_stop", "ghost-000000"),
        ("pit_tail", "ghost-000000"),
        ("pit_archive", "ghost-000000"),
        ("pit_msg", "ghost-000000", "hello"),
    ],
    ids=lambda argv: argv[0],
)
def test_an_unknown_realm_is_a_clear_error(argv: tuple[str, ...]) -> None:
    with pytest.raises(CommandError, match="'ghost-000000': no such realm"):
        run(*argv)
    assert not Realm.objects.exists()
