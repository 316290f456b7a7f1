"""Celery tasks of the forge: thin, replayable, claiming their realm first."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from celery import shared_task

from realms.forge import services
from realms.forge.outputs import capture_outputs
from realms.models import Realm

log = logging.getLogger(__name__)

#: Builds the sandbox requests (birth configs, resources) of a realm being provisioned.
#: The provisioning pipeline (bus identities, keys) registers it; Forge only starts
#: what it is handed.
RequestBuilder = Callable[[Realm], Sequence[services.AgentSandboxRequest]]
_request_builder: RequestBuilder | None = None


def register_request_builder(builder: RequestBuilder | None) -> None:
    global _request_builder
    _request_builder = builder


@shared_task(name="forge.provision_realm", acks_late=True)
def provision_realm(realm_id: str) -> list[str]:
    """Start the sandboxes of a realm that is ``pending``; a duplicate delivery finds
    the realm already claimed and does nothing."""
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if realm is None:
        log.info("provision_realm: realm %s is gone", realm_id)
        return []
    if not services.claim_realm(realm_id, [Realm.State.PENDING], Realm.State.PROVISIONING):
        log.info("provision_realm: realm %s already claimed", realm_id)
        return []
    if _request_builder is None:
        raise services.ForgeError("no sandbox request builder is registered")
    environment: dict[str, Any] = realm.project.get("spec", {}).get("environment", {}) or {}
    shared = bool((environment.get("shared_folder") or {}).get("enabled", False))
    try:
        rows = services.start_agent_sandboxes(
            realm_id,
            list(_request_builder(realm)),
            shared_folder=shared,
            egress=environment.get("network_egress", "model_only"),
        )
    except services.ForgeError:
        services.claim_realm(realm_id, [Realm.State.PROVISIONING], Realm.State.FAILED)
        raise
    return [row.agent_id for row in rows]


@shared_task(name="forge.teardown_realm", acks_late=True)
def teardown_realm(realm_id: str) -> list[dict[str, Any]]:
    """Stop the realm's sandboxes, capture ``spec.outputs``, release mounts and cgroups.
    Every step is idempotent, so a repeated delivery is harmless."""
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if realm is None:
        log.info("teardown_realm: realm %s is gone", realm_id)
        return []
    if services.released_marker(realm_id).exists():
        log.info("teardown_realm: realm %s is already torn down", realm_id)
        return []
    services.stop_realm_sandboxes(realm_id, "teardown")
    globs = list(realm.project.get("spec", {}).get("outputs", []) or [])
    captured = capture_outputs(realm_id, globs) if globs else []
    services.release_realm(realm_id)
    return captured
