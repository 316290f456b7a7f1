"""The settings page's forms: the active provider, a profile's tiers, and provider keys.

Each form only parses what the operator typed; whether a value is acceptable is the
ledger's rule (:func:`save_model_config`, the credential services), whose located errors
the views put back beside the field they name. Prices are typed per million tokens, as
providers publish them, and stored per token.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django import forms

from ledger.services.profiles import TIERS, Profile

PER_MILLION = Decimal(1_000_000)
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# The tier fields of the ledger's model, and the form fields that carry them.
TIER_FIELDS = {
    "model": "model",
    "effort": "effort",
    "input_cost_per_token": "input",
    "output_cost_per_token": "output",
    "context_length": "context",
}


def per_million(per_token: Decimal | None) -> str:
    if per_token is None:
        return ""
    text = format((per_token * PER_MILLION).normalize(), "f")
    return text


class ProviderForm(forms.Form):
    model_provider = forms.ChoiceField(label="Active provider")

    def __init__(self, *args: Any, profiles: dict[str, Profile], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["model_provider"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [
            (name, f"{p.label or name} ({name})") for name, p in sorted(profiles.items())
        ]


class TierForm(forms.Form):
    """Every tier of one profile: model, effort, prices per million tokens, context."""

    def __init__(self, *args: Any, profile: Profile, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", f"tiers-{profile.name}")
        super().__init__(*args, **kwargs)
        self.profile = profile
        self.tiers = [t for t in TIERS if t in profile.categories]
        for tier in self.tiers:
            current = profile.categories[tier]
            self.fields[f"{tier}-model"] = forms.CharField(
                label=f"{tier} model", max_length=200, initial=current.model
            )
            self.fields[f"{tier}-effort"] = forms.ChoiceField(
                label=f"{tier} effort",
                required=False,
                choices=[("", "none"), *((e, e) for e in EFFORTS)],
                initial=current.effort or "",
            )
            for name, price in (
                ("input", current.input_cost_per_token),
                ("output", current.output_cost_per_token),
            ):
                self.fields[f"{tier}-{name}"] = forms.CharField(
                    label=f"{tier} {name} price, $ per million tokens",
                    required=False,
                    max_length=40,
                    initial=per_million(price),
                    widget=forms.TextInput(attrs={"inputmode": "decimal", "size": "9"}),
                )
            self.fields[f"{tier}-context"] = forms.CharField(
                label=f"{tier} context length, tokens",
                required=False,
                max_length=12,
                initial="" if current.context_length is None else str(current.context_length),
                widget=forms.TextInput(attrs={"inputmode": "numeric", "size": "9"}),
            )
        if profile.source == "plugin":  # an installed package's to change, not ours
            for field in self.fields.values():
                field.disabled = True

    def _price(self, tier: str, name: str) -> float | None:
        raw = str(self.cleaned_data.get(f"{tier}-{name}") or "").strip()
        if not raw:
            return None
        try:
            value = Decimal(raw.replace(",", "").removeprefix("$"))
        except InvalidOperation:
            self.add_error(f"{tier}-{name}", f"{raw!r} is not a number of dollars")
            return None
        if not value.is_finite():
            self.add_error(f"{tier}-{name}", f"{raw!r} is not a number of dollars")
            return None
        return float(value / PER_MILLION)

    def _context(self, tier: str) -> int | None:
        raw = str(self.cleaned_data.get(f"{tier}-context") or "").strip()
        if not raw:
            return None
        if not raw.isdigit():
            self.add_error(f"{tier}-context", f"{raw!r} is not a whole number of tokens")
            return None
        return int(raw)

    def edit(self) -> dict[str, Any]:
        """The ``providers`` edit for :func:`save_model_config` (after ``is_valid``); a
        value that is not a number adds its error here."""
        categories = {}
        for tier in self.tiers:
            categories[tier] = {
                "model": self.cleaned_data[f"{tier}-model"].strip(),
                "effort": self.cleaned_data.get(f"{tier}-effort") or None,
                "input_cost_per_token": self._price(tier, "input"),
                "output_cost_per_token": self._price(tier, "output"),
                "context_length": self._context(tier),
            }
        return {self.profile.name: {"categories": categories}}

    def locate(self, field: str, message: str) -> None:
        """Put the ledger's error (``providers.NAME.categories.TIER.FIELD``) beside its field."""
        parts = field.split(".")
        if len(parts) >= 5 and parts[3] in self.tiers and parts[4] in TIER_FIELDS:
            self.add_error(f"{parts[3]}-{TIER_FIELDS[parts[4]]}", message)
        else:
            self.add_error(None, message)

    def rows(self) -> list[dict[str, Any]]:
        """The bound fields by tier, for the table the template draws."""
        return [
            {"tier": t, **{n: self[f"{t}-{n}"] for n in TIER_FIELDS.values()}} for t in self.tiers
        ]


class AddKeyForm(forms.Form):
    handle = forms.CharField(
        label="Handle",
        max_length=120,
        help_text="The name profiles use to find this key (their api_key_ref).",
    )
    provider = forms.CharField(
        label="Provider", max_length=60, help_text="The provider the key is for, e.g. azure."
    )
    api_key = forms.CharField(
        label="Key",
        max_length=4096,
        required=False,
        strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "off"}),
        help_text="Stored encrypted; never shown again. Leave empty for a keyless provider.",
    )
    api_base = forms.CharField(
        label="Base URL", max_length=500, required=False, help_text="Only if not the default."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "add-key")
        super().__init__(*args, **kwargs)


class RotateKeyForm(forms.Form):
    api_key = forms.CharField(
        label="New key",
        max_length=4096,
        strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "off"}),
    )

    def __init__(self, *args: Any, handle: str, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", f"rotate-{handle}")
        super().__init__(*args, **kwargs)
        self.handle = handle
        self.fields["api_key"].label = f"New key for {handle}"


def credential_field(message: str) -> str | None:
    """Which add-key field a credential error is about, from the message's first word."""
    for prefix, field in (("handle", "handle"), ("provider", "provider"), ("api key", "api_key")):
        if message.startswith(prefix):
            return field
    return None
