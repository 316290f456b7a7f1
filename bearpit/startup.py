"""Load the settings before a process starts, or stop it with one line.

A process manager shows the last lines a service wrote; a traceback through Django's
import machinery buries the one that names the setting at fault.
"""

from __future__ import annotations

import sys

from django.core.exceptions import ImproperlyConfigured

EXIT_SETTINGS = 2


def settings_or_exit(program: str) -> None:
    from django.conf import settings

    try:
        settings.INSTALLED_APPS  # noqa: B018  (reading one setting loads them all)
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"{program}: cannot start: {exc}\n")
        sys.stderr.flush()
        raise SystemExit(EXIT_SETTINGS) from None
