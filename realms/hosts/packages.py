"""A realm's package on the host that provisions it.

The web process writes a library scenario to its own ``BEARPIT_HOME/library/<sha>/<name>``
and records that path at launch; another worker host has no such folder. The folders are
content-addressed, so the host writes the same scenario version under its own home and
the realm's row points there."""

from __future__ import annotations

from pathlib import Path

from realms.library.services import materialize
from realms.models import Realm


def localize_package(realm_id: str) -> str | None:
    """Make the realm's library package readable on this host; its path, or None when
    the recorded one is already here or is no library copy of a stored scenario."""
    realm = Realm.objects.select_related("scenario").filter(realm_id=realm_id).first()
    if realm is None or not realm.package_path or Path(realm.package_path).exists():
        return None
    scenario = realm.scenario
    recorded = Path(realm.package_path)
    if scenario is None or recorded.parent.name != scenario.content_sha256[:16]:
        return None  # another version than the library holds now: nothing to rebuild
    local = materialize(scenario)
    Realm.objects.filter(pk=realm.pk).update(package_path=str(local))
    return str(local)
