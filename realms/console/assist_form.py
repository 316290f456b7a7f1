"""The form that opens a Scribe session: the scenario, and the model Scribe talks through.

The operator picks the provider profile, its tier and the session's cap; the defaults are
Scribe's settings (``BEARPIT_SCRIBE_PROVIDER``, ``_TIER``, ``_CAP_USD``). Whether a profile
can be used (its key is stored) is the session service's to say, beside this form.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.conf import settings

from ledger.services.profiles import active_provider_name, all_profiles
from realms.library.services import NAME_RE
from scribe.services.sessions import TIERS

MAX_CAP_USD = Decimal("1000")


def default_provider() -> str:
    return str(settings.BEARPIT_SCRIBE_PROVIDER or active_provider_name())


class AssistStartForm(forms.Form):
    name = forms.CharField(
        label="Name",
        required=False,
        max_length=120,
        help_text="Optional. Letters, digits, '.', '_' or '-'; without one, the draft is "
        "saved under the name its project.json gives.",
    )
    provider = forms.ChoiceField(
        label="Provider profile",
        help_text="Scribe needs a model behind it: on the offline (scripted) profile it "
        "only replays BEARPIT_SCRIBE_OFFLINE_SCRIPT.",
    )
    tier = forms.ChoiceField(
        label="Tier", choices=[(t, t) for t in TIERS], help_text="The profile's model tier."
    )
    cap_usd = forms.DecimalField(
        label="Spend cap (USD)",
        min_value=Decimal("0.01"),
        max_value=MAX_CAP_USD,
        decimal_places=2,
        help_text="What this session may spend on its model; it stops there and keeps the draft.",
    )

    def __init__(self, *args: Any, edit: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.edit = edit
        profiles = all_profiles()
        choices = []
        for name in sorted(profiles):
            label = profiles[name].label
            choices.append((name, f"{name} — {label}" if label else name))
        provider = self.fields["provider"]
        assert isinstance(provider, forms.ChoiceField)
        provider.choices = choices
        provider.initial = default_provider()
        self.fields["tier"].initial = settings.BEARPIT_SCRIBE_TIER
        self.fields["cap_usd"].initial = Decimal(str(settings.BEARPIT_SCRIBE_CAP_USD)).quantize(
            Decimal("0.01")
        )
        self.fields["cap_usd"].widget.attrs["step"] = "0.01"
        if edit is not None:
            del self.fields["name"]

    def clean_name(self) -> str:
        name = str(self.cleaned_data.get("name") or "").strip()
        if name and not NAME_RE.match(name):
            raise forms.ValidationError("expected letters, digits, '.', '_' or '-' (at most 120)")
        return name
