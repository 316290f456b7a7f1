"""Bearpit: realms of autonomous LLM agents, physics at the boundaries."""

from __future__ import annotations

from typing import Any

__all__ = ["celery_app"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Celery costs a few hundred milliseconds to import; the read-only commands never
    # queue anything, so the app is built when something first asks for it (the worker
    # through ``celery -A bearpit``, a service through ``bearpit.queue``).
    if name == "celery_app":
        from bearpit.celery import app

        return app
    raise AttributeError(f"module 'bearpit' has no attribute {name!r}")
