"""``pit_stop REALM``: pull the realm's kill switch (it concludes as ``manual``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from realms.management.base import RealmCommand
from realms.warden.termination import request_stop


class Command(RealmCommand):
    help = "Ask a running realm to stop; the Warden concludes it as manual at its next tick."

    def handle_realm(self, realm_id: str, **options: Any) -> None:
        if not request_stop(realm_id):
            # Only a realm row is ticked: a realm known from its Chronicle alone is over.
            raise CommandError(f"realm {realm_id!r} has no realm row: nothing to stop")
        self.stdout.write(f"stop requested for {realm_id}")
