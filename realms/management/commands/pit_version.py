"""``pit_version``: the installed Bearpit's version."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from bearpit import __version__


class Command(BaseCommand):
    help = "Print the version of Bearpit."
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"bearpit {__version__}")
