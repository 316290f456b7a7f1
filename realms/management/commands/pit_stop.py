"""``pit_stop REALM``: pull the realm's kill switch (it concludes as ``manual``)."""

from __future__ import annotations

from typing import Any

from realms.management.base import RealmCommand
from realms.warden.snapshot import stop_flag_path
from realms.warden.termination import request_stop


class Command(RealmCommand):
    help = "Ask a running realm to stop; the Warden concludes it as manual at its next tick."

    def handle_realm(self, realm_id: str, **options: Any) -> None:
        request_stop(realm_id)
        self.stdout.write(f"stop requested for {realm_id} ({stop_flag_path(realm_id)})")
