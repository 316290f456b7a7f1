"""Where the operator's own skills live: ``BEARPIT_HOME/skills/<ref>/``."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def user_root() -> Path:
    return Path(settings.BEARPIT_HOME) / "skills"
