"""Prompt templates, rendered strictly: a missing variable is an error, never an empty string."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

_ENV = Environment(
    loader=FileSystemLoader(Path(__file__).parent),
    undefined=StrictUndefined,
    autoescape=False,  # noqa: S701 - these are prompts for a model, not HTML
    keep_trailing_newline=False,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(name: str, **variables: Any) -> str:
    """Render ``name`` with ``variables``; raises jinja2.UndefinedError on a missing one."""
    return _ENV.get_template(name).render(**variables).strip() + "\n"
