"""The forecast as the commands print it (``pit_forecast``, ``pit_up --forecast``)."""

from __future__ import annotations

from pathlib import Path

from django.core.management import call_command
from django.core.management.base import CommandError

from realms.forecast.estimate import Forecast, forecast
from realms.forecast.render import lines
from realms.services.launch import LaunchError, LaunchOptions
from realms.services.providers import choose_provider


def run_forecast(
    path: Path,
    parameters: dict[str, str],
    *,
    provider: str | None,
    realm_id: str | None = None,
    allow_missing: bool = False,
    allow_fallback: bool = False,
) -> tuple[Forecast, str]:
    """The forecast and the provider note; a refused launch is a CommandError."""
    # A forecast needs the database a launch would write to (and rolls the write back).
    call_command("migrate", interactive=False, verbosity=0)
    try:
        choice = choose_provider(provider, allow_fallback=allow_fallback)
        found = forecast(
            path,
            LaunchOptions(
                realm_id=realm_id,
                parameters=parameters,
                allow_missing_parameters=allow_missing,
                choice=choice,
            ),
        )
    except LaunchError as exc:
        raise CommandError("forecast refused:\n  " + "\n  ".join(exc.problems)) from exc
    return found, choice.note


def forecast_lines(found: Forecast, note: str) -> list[str]:
    return ([f"provider: {note}"] if note else []) + lines(found)
