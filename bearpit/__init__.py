"""Bearpit: realms of autonomous LLM agents, physics at the boundaries."""

from bearpit.celery import app as celery_app

__all__ = ["celery_app"]
__version__ = "0.1.0"
