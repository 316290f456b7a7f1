"""The settings page: the active provider, each profile's tiers, provider keys by handle,
the tools and sandboxes with whether each is ready, and capacity.

Every change goes through the ledger's own service (the one the settings API calls), and
its located error goes back beside the field it names. A key is typed into a password
field, stored encrypted, and never put on a page again: not in a form re-shown after an
error, not in a message.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_POST

from ledger.services.credentials import (
    CredentialError,
    add_credential,
    list_credentials,
    remove_credential,
    rotate_credential,
)
from ledger.services.model_config import ModelConfigError, save_model_config
from ledger.services.profiles import (
    Profile,
    ProfileError,
    active_provider_name,
    all_profiles,
    set_active_profile,
    stored_provider,
)
from realms.console.access import operator_required
from realms.console.settings_forms import (
    AddKeyForm,
    ProviderForm,
    RotateKeyForm,
    TierForm,
    credential_field,
)
from realms.forge.readiness import backend_readiness, selected_backend
from realms.realmtools.readiness import tool_readiness
from realms.services.queue import active_realms


def _keys(profiles: dict[str, Profile], rotating: RotateKeyForm | None) -> list[dict[str, Any]]:
    rows = []
    for key in list_credentials():
        form = rotating if rotating is not None and rotating.handle == key.handle else None
        rows.append(
            {
                "handle": key.handle,
                "provider": key.provider,
                "api_base": key.api_base,
                "used_by": sorted(n for n, p in profiles.items() if p.api_key_ref == key.handle),
                "rotate": form or RotateKeyForm(handle=key.handle),
            }
        )
    return rows


def _readiness() -> dict[str, Any]:
    backends = backend_readiness()
    selected = selected_backend()
    sandbox = next(b for b in backends if b.name == selected)
    return {"backends": backends, "selected": selected, "tools": tool_readiness(sandbox)}


def _page(
    request: HttpRequest,
    *,
    status: int = 200,
    provider_form: ProviderForm | None = None,
    tier_form: TierForm | None = None,
    add_key_form: AddKeyForm | None = None,
    rotate_form: RotateKeyForm | None = None,
) -> HttpResponse:
    profiles = all_profiles()
    active = active_provider_name()
    tier_forms = [
        tier_form
        if tier_form is not None and tier_form.profile.name == name
        else TierForm(profile=profile)
        for name, profile in sorted(profiles.items(), key=lambda item: item[0] != active)
    ]
    context = {
        "nav": "settings",
        "active": active,
        "overridden": bool(settings.BEARPIT_PROVIDER),
        "provider_form": provider_form
        or ProviderForm(initial={"model_provider": stored_provider()}, profiles=profiles),
        "tier_forms": tier_forms,
        "keys": _keys(profiles, rotate_form),
        "add_key_form": add_key_form or AddKeyForm(),
        "capacity": {"active": active_realms(), "max": settings.BEARPIT_MAX_ACTIVE_REALMS},
        **_readiness(),
    }
    return render(request, "console/settings.html", context, status=status)


@operator_required
@require_GET
def settings_page(request: HttpRequest) -> HttpResponse:
    return _page(request)


@operator_required
@require_POST
def provider(request: HttpRequest) -> HttpResponse:
    form = ProviderForm(request.POST, profiles=all_profiles())
    if form.is_valid():
        try:
            chosen = set_active_profile(form.cleaned_data["model_provider"])
        except ProfileError as exc:
            form.add_error("model_provider", str(exc))
        else:
            messages.success(request, f"Launches now resolve against {chosen.name}.")
            return redirect("console:settings")
    return _page(request, status=400, provider_form=form)


@operator_required
@require_POST
def tiers(request: HttpRequest, name: str) -> HttpResponse:
    profile = all_profiles().get(name)
    if profile is None:
        messages.error(request, f"provider {name!r}: no such profile")
        return _page(request, status=404)
    form = TierForm(request.POST, profile=profile)
    if form.is_valid():
        edit = form.edit()
        if not form.errors:
            try:
                save_model_config(edit)
            except ModelConfigError as exc:
                form.locate(exc.field, exc.message)
            else:
                messages.success(request, f"The tiers of {name} are saved.")
                return redirect("console:settings")
    return _page(request, status=400, tier_form=form)


@operator_required
@sensitive_post_parameters("add-key-api_key")
@require_POST
def add_key(request: HttpRequest) -> HttpResponse:
    form = AddKeyForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            added = add_credential(
                handle=data["handle"],
                provider=data["provider"],
                api_key=data["api_key"] or None,
                api_base=data["api_base"],
            )
        except CredentialError as exc:
            form.add_error(credential_field(str(exc)), str(exc))
        else:
            messages.success(request, f"Key {added.handle} for {added.provider} is stored.")
            return redirect("console:settings")
    return _page(request, status=400, add_key_form=form)


@operator_required
@sensitive_post_parameters()  # the key field's name carries the handle: hide every field
@require_POST
def rotate_key(request: HttpRequest, handle: str) -> HttpResponse:
    form = RotateKeyForm(request.POST, handle=handle)
    if form.is_valid():
        try:
            rotate_credential(handle=handle, api_key=form.cleaned_data["api_key"])
        except CredentialError as exc:
            messages.error(request, str(exc))
            return _page(request, status=404 if "no such" in str(exc) else 400)
        messages.success(request, f"Key {handle} is rotated.")
        return redirect("console:settings")
    return _page(request, status=400, rotate_form=form)


@operator_required
@require_POST
def remove_key(request: HttpRequest, handle: str) -> HttpResponse:
    """Asks first (a removed key cannot be brought back), then removes."""
    if request.POST.get("confirm") != "yes":
        known = {k.handle for k in list_credentials()}
        if handle not in known:
            messages.error(request, f"handle {handle!r}: no such credential")
            return _page(request, status=404)
        used_by = sorted(n for n, p in all_profiles().items() if p.api_key_ref == handle)
        context = {"nav": "settings", "handle": handle, "used_by": used_by}
        return render(request, "console/settings_remove_key.html", context)
    try:
        remove_credential(handle=handle)
    except CredentialError as exc:
        messages.error(request, str(exc))
        return _page(request, status=404)
    messages.success(request, f"Key {handle} is removed.")
    return redirect("console:settings")
