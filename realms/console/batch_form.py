"""The form that starts a batch of a scenario: how many runs, how many at once, the
parameter values every run shares, and optionally a grid of values the runs cycle
through and the endings that count as intended.

The parameters are the launch form's fields; whether a value is acceptable is the
package's rule, checked again (with every grid cell) when the batch is planned.
"""

from __future__ import annotations

from typing import Any

from django import forms

from realms.batch.service import MAX_RUNS, LibraryBatch
from realms.console.launch_form import (
    check_parameter_values,
    field_name,
    parameter_field,
    provider_field,
)
from realms.packages.parameters import ParameterInfo, value_problem


def _split(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


class BatchForm(forms.Form):
    n = forms.IntegerField(
        label="Runs",
        min_value=1,
        max_value=MAX_RUNS,
        initial=2,
        help_text=f"How many realms to run (1 to {MAX_RUNS}).",
    )
    concurrency = forms.IntegerField(
        label="At once",
        min_value=1,
        max_value=MAX_RUNS,
        initial=1,
        help_text="How many of them may be live at the same time (never more than capacity).",
    )
    grid = forms.CharField(
        label="Grid",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Optional: one NAME=V1,V2 a line; the runs cycle through every combination.",
    )
    intended = forms.CharField(
        label="Intended endings",
        required=False,
        help_text="Optional: termination kinds that count as success, comma-separated "
        "(default: the package's research.json, else the endings a scenario makes itself).",
    )

    def __init__(self, *args: Any, parameters: list[ParameterInfo], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parameters = parameters
        for param in parameters:
            field = parameter_field(param)
            field.initial = param.default
            self.fields[field_name(param)] = field
        self.fields["provider"] = provider_field()

    def param_fields(self) -> list[tuple[ParameterInfo, forms.BoundField]]:
        return [(param, self[field_name(param)]) for param in self.parameters]

    def option_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in ("n", "concurrency", "provider", "grid", "intended")]

    def clean_grid(self) -> dict[str, list[str]]:
        grid: dict[str, list[str]] = {}
        known = {p.name: p for p in self.parameters}
        for line in str(self.cleaned_data.get("grid") or "").splitlines():
            if not line.strip():
                continue
            name, sep, values = line.partition("=")
            name = name.strip()
            if not sep or not name or not _split(values):
                raise forms.ValidationError(f"{line.strip()!r}: expected NAME=V1,V2")
            if name not in known:
                raise forms.ValidationError(f"{name}: the package has no such parameter")
            if name in grid:
                raise forms.ValidationError(f"{name}: given twice")
            for value in _split(values):
                trouble = value_problem(known[name], value)
                if trouble is not None:
                    raise forms.ValidationError(f"{name}={value}: {trouble}")
            grid[name] = _split(values)
        return grid

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        check_parameter_values(self, self.parameters, data)
        n, concurrency = data.get("n"), data.get("concurrency")
        if isinstance(n, int) and isinstance(concurrency, int) and concurrency > n:
            self.add_error("concurrency", f"at most the number of runs ({n})")
        return data

    def request(self, name: str) -> LibraryBatch:
        data = self.cleaned_data
        grid = data.get("grid") or {}
        return LibraryBatch(
            name=name,
            count=data["n"],
            concurrency=data["concurrency"],
            parameters={
                p.name: data[field_name(p)]
                for p in self.parameters
                if data.get(field_name(p)) and p.name not in grid
            },
            grid=grid,
            provider=data.get("provider") or "",
            intended=_split(data.get("intended") or "") or None,
        )

    def refuse(self, problems: list[str]) -> None:
        """Place each of the batch's refusals beside the field it concerns."""
        fields = {f"{p.name}": field_name(p) for p in self.parameters}
        for line in problems:
            head, _, rest = line.partition(": ")
            if head in fields and rest:
                self.add_error(fields[head], rest)
            elif head in ("n", "concurrency", "intended") and rest:
                self.add_error(head, rest)
            elif head.startswith("grid ") and rest:
                self.add_error("grid", line.removeprefix("grid "))
            else:
                self.add_error(None, line)
