"""What every console template may use."""

from __future__ import annotations

from django.http import HttpRequest

from bearpit import __version__


def console(request: HttpRequest) -> dict[str, str]:
    return {"bearpit_version": __version__}
