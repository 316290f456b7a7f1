"""``pit_stop REALM``: pull the realm's kill switch (it concludes as ``manual``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chronicle import selectors
from realms.warden.snapshot import stop_flag_path
from realms.warden.termination import request_stop


class Command(BaseCommand):
    help = "Ask a running realm to stop; the Warden concludes it as manual at its next tick."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("realm", help="realm id")

    def handle(self, *args: Any, **options: Any) -> None:
        realm_id = options["realm"]
        if not selectors.realm_known(realm_id):
            raise CommandError(f"realm {realm_id!r}: no such realm")
        request_stop(realm_id)
        self.stdout.write(f"stop requested for {realm_id} ({stop_flag_path(realm_id)})")
