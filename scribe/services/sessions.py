"""Scribe sessions: open one (with its own capped key), show it, approve its draft.

Approval is the only way a draft reaches the library, and it goes through the library's
own services, always into the user's copy.
"""

from __future__ import annotations

import json
import re
import secrets
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction

from ledger import keystore
from ledger.models import NANO, VirtualKey
from ledger.services.keys import MintError, mint_virtual_key
from ledger.services.profiles import ProfileError, active_provider_name, get_profile
from realms.library import services as library
from realms.models import Scenario
from scribe.models import ScribeSession
from scribe.services import drafts, history
from scribe.services.errors import NoSuchSession, NotApprovable, NotYours, ScribeError
from scribe.services.model import Endpoint, gateway_endpoint

# The ledger's realm id for Scribe's keys: not a realm id any realm can have.
KEY_REALM = "_scribe"
TIERS = ("small", "medium", "large")


def _offline_script() -> str:
    path = settings.BEARPIT_SCRIBE_OFFLINE_SCRIPT
    try:
        return str(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScribeError(f"BEARPIT_SCRIBE_OFFLINE_SCRIPT: cannot read {path}: {exc}") from exc


def _mint(
    session: ScribeSession,
    *,
    provider: str | None,
    model: str | None,
    credential_handle: str | None,
    cap_usd: Decimal | None,
    tier: str | None = None,
) -> None:
    try:
        profile = get_profile(
            provider or settings.BEARPIT_SCRIBE_PROVIDER or active_provider_name()
        )
    except ProfileError as exc:
        raise ScribeError(str(exc)) from exc
    wanted = tier or settings.BEARPIT_SCRIBE_TIER
    picked = profile.categories.get(wanted) or profile.categories.get("medium")
    chosen = model or (picked.model if picked else "")
    if not chosen:
        raise ScribeError(f"provider {profile.name!r}: defines no model tiers; name a model")
    cap = cap_usd if cap_usd is not None else Decimal(str(settings.BEARPIT_SCRIBE_CAP_USD))
    try:
        key, secret = mint_virtual_key(
            realm_id=KEY_REALM,
            agent_id=session.session_id,
            provider=profile.name,
            model=chosen,
            cap_usd=cap,
            on_exhausted="starve",
            credential_handle=credential_handle,
            script=_offline_script() if profile.transport == "scripted" else None,
        )
    except MintError as exc:
        raise ScribeError(
            f"Scribe cannot get a key on provider {profile.name!r}: {exc} "
            "(or choose another profile with BEARPIT_SCRIBE_PROVIDER)"
        ) from exc
    session.key_id = key.pk
    session.key_secret = keystore.encrypt(secret)
    session.provider = profile.name
    session.model = chosen


@transaction.atomic
def create_session(
    mode: str,
    scenario: str | None = None,
    *,
    provider: str | None = None,
    model: str | None = None,
    credential_handle: str | None = None,
    cap_usd: Decimal | None = None,
    direct_model: str | None = None,
    tier: str | None = None,
    owner: Any = None,
) -> ScribeSession:
    """A new session; ``direct_model`` skips the gateway (``pit assist --api-base``).

    ``tier`` picks the profile's tier (``BEARPIT_SCRIBE_TIER`` otherwise); ``owner`` is
    the console user who opened it (none with the operator token).
    """
    if mode not in ScribeSession.Mode.values:
        raise ScribeError(f"mode: expected create or edit; got {mode!r}")
    if tier is not None and tier not in TIERS:
        raise ScribeError(f"tier: expected one of {', '.join(TIERS)}; got {tier!r}")
    if cap_usd is not None and cap_usd <= 0:
        raise ScribeError("cap_usd: must be more than 0")
    name = (scenario or "").strip()
    library.sync_examples()
    saved: dict[str, str] = {}
    if mode == ScribeSession.Mode.EDIT:
        if not name:
            raise ScribeError("scenario: required to edit")
        try:
            saved = drafts.decoded(library.scenario_files(library.resolve(name)))
        except library.LibraryError as exc:
            raise ScribeError(str(exc)) from exc
    elif name:
        if not library.NAME_RE.match(name):
            raise ScribeError(
                f"scenario {name!r}: expected letters, digits, '.', '_' or '-' (at most 120)"
            )
        if Scenario.objects.filter(name=name).exists():
            raise ScribeError(f"scenario {name!r} is already in the library; edit it instead")
    session = ScribeSession(session_id=secrets.token_hex(8), mode=mode, scenario=name, owner=owner)
    if direct_model is not None:
        session.provider, session.model = "direct", direct_model
    else:
        _mint(
            session,
            provider=provider,
            model=model,
            credential_handle=credential_handle,
            cap_usd=cap_usd,
            tier=tier,
        )
    session.save()
    if saved:
        drafts.new_version(session, saved, f"saved {name}")
    return session


def get_session(session_id: str, *, for_update: bool = False) -> ScribeSession:
    rows = ScribeSession.objects.select_for_update() if for_update else ScribeSession.objects
    session = rows.filter(session_id=str(session_id)).first()
    if session is None:
        raise NoSuchSession(f"session {session_id!r}: no such Scribe session")
    return session


def owned_session(session_id: str, user: Any) -> ScribeSession:
    """The session, if ``user`` may see it: one they opened, or one opened with the bare
    token (it names nobody). ``user`` without a key is the token itself, which sees all."""
    session = get_session(session_id)
    mine = getattr(user, "pk", None)
    if session.owner_id is not None and mine is not None and session.owner_id != mine:
        raise NotYours(f"session {session_id!r} was opened by another user; it is not yours")
    return session


def endpoint_of(session: ScribeSession) -> Endpoint:
    if not session.key_secret:
        raise ScribeError("this session calls a direct endpoint; only its terminal can continue it")
    return gateway_endpoint(keystore.decrypt(bytes(session.key_secret)), session.model)


def _usd(nusd: int | None) -> float | None:
    return None if nusd is None else nusd / NANO


def spend_of(session: ScribeSession) -> dict[str, Any]:
    key = VirtualKey.objects.filter(pk=session.key_id).first() if session.key_id else None
    if key is None:
        return {"provider": session.provider, "model": session.model, "metered": False}
    spent = key.base_nusd + key.spent_nusd
    return {
        "provider": session.provider,
        "model": session.model,
        "metered": True,
        "spent_usd": _usd(spent),
        "cap_usd": _usd(key.cap_nusd),
        "calls": key.calls,
        "tokens_in": key.tokens_in,
        "tokens_out": key.tokens_out,
        "exhausted": session.state == ScribeSession.State.CAPPED,
    }


def session_view(session: ScribeSession) -> dict[str, Any]:
    """Everything a page needs to resume: the draft, its validation and diff, history, spend."""
    version = drafts.current(session)
    files = dict(version.files) if version is not None else {}
    return {
        "session_id": session.session_id,
        "mode": session.mode,
        "scenario": session.scenario,
        "state": session.state,
        "version": version.number if version is not None else 0,
        "proposed_version": session.proposed_version,
        "files": files,
        "validation": drafts.check(files),
        "diff": drafts.diff(drafts.saved_files(session), files),
        "transcript": list(session.transcript),
        "history": history.entries(session.scenario)
        if session.scenario
        else history.of_session(session),
        "spend": spend_of(session),
    }


def _project_name(files: dict[str, str]) -> str:
    try:
        name = str(json.loads(files.get("project.json", "{}"))["metadata"]["name"])
    except (ValueError, KeyError, TypeError):
        return ""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-._")[:120]


@transaction.atomic
def approve(session_id: str) -> Scenario:
    """Save the proposed draft into the library, as the user's copy; nothing else changes."""
    session = ScribeSession.objects.select_for_update().filter(session_id=str(session_id)).first()
    if session is None:
        raise NoSuchSession(f"session {session_id!r}: no such Scribe session")
    version = drafts.current(session)
    if session.state == ScribeSession.State.APPROVED:
        raise NotApprovable("this session's draft is already approved and saved")
    if session.replying_since is not None:
        raise NotApprovable("Scribe is still replying; approve once its reply has ended")
    if (
        version is None
        or session.proposed_version is None
        or session.proposed_version != version.number
    ):
        raise NotApprovable(
            "nothing to approve: Scribe has not proposed the current draft "
            "(it proposes a draft once it validates)"
        )
    files = dict(version.files)
    name = session.scenario or _project_name(files)
    if not name:
        raise NotApprovable("the draft's project.json names no scenario (metadata.name)")
    tree = drafts.as_tree(files)
    try:
        if session.mode == ScribeSession.Mode.EDIT:
            scenario = library.save_user_copy(name, tree)
        else:
            scenario = library.create_scenario(name, tree, origin=f"scribe {session.session_id}")
    except library.InvalidPackage as exc:
        raise NotApprovable(f"{exc}: {[e['text'] for e in exc.errors]}") from exc
    except library.LibraryError as exc:
        raise NotApprovable(str(exc)) from exc
    if not session.scenario:
        session.scenario = name
        session.history.update(scenario=name)
    session.state = ScribeSession.State.APPROVED
    session.save(update_fields=["scenario", "state", "updated_at"])
    history.record(session, "approved", f"v{version.number} saved as {name}")
    return scenario
