"""The launch form of a scenario, built from its parameters.

Each parameter becomes a field: choices a select, numbers a number input with their
bounds, multi-line text a textarea; its description is the help. Whether a value is
acceptable is the package's rule (:func:`value_problem`), so the form and ``pit_up``
refuse the same values with the same words.
"""

from __future__ import annotations

from typing import Any

from django import forms

from ledger.services.profiles import active_provider_name, all_profiles
from realms.packages.parameters import ParameterInfo, missing_parameters, value_problem
from realms.services.launch import LaunchError, LaunchOptions
from realms.services.providers import choose_provider

PREFIX = "param-"
_MISSING = "required parameters have no value"
_REALM_ID = "realm id "


def field_name(param: ParameterInfo) -> str:
    return PREFIX + param.name


def _bounds(param: ParameterInfo) -> str:
    low, high = param.minimum, param.maximum
    if low is not None and high is not None:
        return f"{low:g} to {high:g}"
    if low is not None:
        return f"at least {low:g}"
    return f"at most {high:g}" if high is not None else ""


def parameter_field(param: ParameterInfo) -> forms.Field:
    """The form field of one package parameter (the launch form's and the batch form's)."""
    help_text = param.description or ""
    if _bounds(param):
        help_text = f"{help_text} ({_bounds(param)})" if help_text else _bounds(param).capitalize()
    label = param.name
    if param.choices is not None:
        options = [(c, c) for c in param.choices]
        if param.default is None:
            options.insert(0, ("", "— choose —"))
        return forms.ChoiceField(label=label, choices=options, required=False, help_text=help_text)
    if param.type in ("int", "number"):
        attrs: dict[str, Any] = {"step": "1" if param.type == "int" else "any"}
        if param.minimum is not None:
            attrs["min"] = f"{param.minimum:g}"
        if param.maximum is not None:
            attrs["max"] = f"{param.maximum:g}"
        # Text, not IntegerField: the package's own rule judges the value, below.
        return forms.CharField(
            label=label, required=False, help_text=help_text, widget=forms.NumberInput(attrs)
        )
    if param.type == "bool":
        options = [("true", "true"), ("false", "false")]
        if param.default is None:
            options.insert(0, ("", "— choose —"))
        return forms.ChoiceField(label=label, choices=options, required=False, help_text=help_text)
    widget = forms.Textarea(attrs={"rows": 4}) if param.multiline else forms.TextInput()
    return forms.CharField(
        label=label, required=False, help_text=help_text, widget=widget, strip=False
    )


def check_parameter_values(
    form: forms.Form, parameters: list[ParameterInfo], data: dict[str, Any]
) -> None:
    """Each parameter value given is one its declaration allows, else an error beside it."""
    for param in parameters:
        name = field_name(param)
        value = data.get(name) or ""
        if value:
            trouble = value_problem(param, value)
            if trouble is not None:
                form.add_error(name, trouble)


def _default_provider() -> str:
    try:
        choice = choose_provider(None)
    except LaunchError:
        return f"{active_provider_name()}, which cannot be called now"
    return f"{choice.name}, none configured" if choice.note else choice.name


def provider_field() -> forms.ChoiceField:
    """The provider profile a launch resolves its tiers against; empty is the default a
    launch without one gets (the active profile, or offline on a fresh installation)."""
    names = sorted(all_profiles())
    return forms.ChoiceField(
        label="Provider",
        choices=[("", f"Default ({_default_provider()})"), *((n, n) for n in names)],
        required=False,
        help_text="The profile each agent's tier, model and price come from.",
    )


class LaunchForm(forms.Form):
    realm_id = forms.CharField(
        label="Realm id",
        required=False,
        max_length=80,
        help_text="Optional: lower-case letters, digits and '-'. Left empty, one is made up.",
    )
    free_response = forms.BooleanField(
        label="Free response: every agent reads every Commons message",
        required=False,
    )

    def __init__(
        self,
        *args: Any,
        parameters: list[ParameterInfo],
        elevated: list[str],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.parameters = parameters
        self.elevated = elevated
        for param in parameters:
            field = parameter_field(param)
            field.initial = param.default
            self.fields[field_name(param)] = field
        self.fields["provider"] = provider_field()
        if any(param.required for param in parameters):
            self.fields["allow_missing_parameters"] = forms.BooleanField(
                label="Launch even if a required parameter is left empty (it is then empty text)",
                required=False,
            )
        if elevated:
            self.fields["allow_elevated_tools"] = forms.BooleanField(
                label="I consent to these grants: " + "; ".join(elevated),
                required=False,
            )

    def param_fields(self) -> list[tuple[ParameterInfo, forms.BoundField]]:
        return [(param, self[field_name(param)]) for param in self.parameters]

    def option_fields(self) -> list[forms.BoundField]:
        names = ["realm_id", "provider", "free_response", "allow_missing_parameters"]
        return [self[name] for name in names if name in self.fields]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        check_parameter_values(self, self.parameters, data)
        if not data.get("allow_missing_parameters"):
            supplied = {p.name: data.get(field_name(p)) or "" for p in self.parameters}
            for param in missing_parameters(self.parameters, supplied):
                self.add_error(
                    field_name(param),
                    "required: give a value, or tick the box below to launch with it empty",
                )
        if self.elevated and not data.get("allow_elevated_tools"):
            self.add_error(
                "allow_elevated_tools",
                "this package grants tools that reach beyond its sandboxes; tick the box to "
                "consent, or do not launch it",
            )
        return data

    def options(self) -> LaunchOptions:
        data = self.cleaned_data
        values = {
            param.name: data[field_name(param)]
            for param in self.parameters
            if data.get(field_name(param))
        }
        return LaunchOptions(
            realm_id=data.get("realm_id") or None,
            parameters=values,
            allow_missing_parameters=bool(data.get("allow_missing_parameters")),
            free_response=bool(data.get("free_response")),
            provider=data.get("provider") or None,
        )

    def consent_field(self) -> forms.BoundField | None:
        return self["allow_elevated_tools"] if "allow_elevated_tools" in self.fields else None

    @property
    def allow_elevated(self) -> bool:
        return bool(self.cleaned_data.get("allow_elevated_tools"))

    def refuse(self, problems: list[str]) -> None:
        """Place each of a launch's refusals beside the field it concerns."""
        by_name = {param.name: field_name(param) for param in self.parameters}
        for line in problems:
            head, _, rest = line.partition(": ")
            if head in by_name and rest:
                self.add_error(by_name[head], rest)
            elif line.startswith(_MISSING) and "allow_missing_parameters" in self.fields:
                self.add_error("allow_missing_parameters", line)
            elif line.startswith(_REALM_ID):
                self.add_error("realm_id", line)
            else:
                self.add_error(None, line)
