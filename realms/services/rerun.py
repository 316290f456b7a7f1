"""Rerun a realm: replay its stored resolved project, or reload its package."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from realms.models import Realm
from realms.plan import plan_of
from realms.services.launch import LaunchError, LaunchOptions, launch_realm, launch_snapshot

Mode = Literal["snapshot", "latest"]


def rerun_realm(
    realm_id: str,
    mode: Mode = "snapshot",
    *,
    new_realm_id: str | None = None,
    provider: str | None = None,
    allow_provider_fallback: bool = False,
    package: Path | None = None,
) -> Realm:
    """A new pending realm from an earlier one.

    ``snapshot`` replays the bound project stored at launch (same prose, same parameter
    values); ``latest`` reloads the package from disk with the same parameter values and
    today's settings (from ``package`` when given: the library's current copy).
    """
    old = Realm.objects.filter(realm_id=realm_id).first()
    if old is None:
        raise LaunchError([f"realm {realm_id!r}: no such realm"])
    old_plan = plan_of(old)
    params = {name: str(value) for name, value in old_plan.parameters.items()}
    options = LaunchOptions(
        realm_id=new_realm_id,
        parameters=params,
        allow_missing_parameters=True,
        free_response=old_plan.free_response,
        provider=provider or old.provider or None,
        allow_provider_fallback=allow_provider_fallback,
    )
    if mode == "latest":
        if package is None and not old.package_path:
            raise LaunchError([f"realm {realm_id!r} has no package path to reload"])
        return launch_realm(package or old.package_path, options)
    if not old.project:
        raise LaunchError([f"realm {realm_id!r} has no stored snapshot"])
    return launch_snapshot(old.project, options, package=old.package_path, parameters=params)
