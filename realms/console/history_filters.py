"""The history page's filters: which runs to list, as a form whose choices are the values
runs actually have, so a value no run can match is refused beside its field."""

from __future__ import annotations

from typing import Any

from django import forms

from realms.models import Realm

ANY = ""
STATES = tuple(s.value for s in Realm.State)


def _choices(values: list[str], everything: str) -> list[tuple[str, str]]:
    return [(ANY, everything), *((v, v) for v in values)]


class HistoryFilter(forms.Form):
    scenario = forms.ChoiceField(label="Scenario", required=False)
    outcome = forms.ChoiceField(label="Outcome", required=False)
    state = forms.ChoiceField(label="State", required=False)

    def __init__(self, data: Any, *, runs: list[dict[str, Any]]) -> None:
        super().__init__(data)
        scenarios = Realm.objects.values_list("package_name", flat=True).distinct()
        outcomes = {str(r["outcome"]) for r in runs if r.get("outcome")}
        states = [*STATES, *sorted({str(r["state"]) for r in runs} - set(STATES))]
        for name, values, everything in (
            ("scenario", sorted(set(scenarios)), "every scenario"),
            ("outcome", sorted(outcomes), "any outcome"),
            ("state", states, "any state"),
        ):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = _choices(values, everything)

    def keep(self, run: dict[str, Any]) -> bool:
        """Whether ``run`` passes the outcome and state filters (scenario is the query's)."""
        outcome = self.cleaned_data.get("outcome") or ANY
        state = self.cleaned_data.get("state") or ANY
        return (outcome == ANY or run.get("outcome") == outcome) and (
            state == ANY or run.get("state") == state
        )
