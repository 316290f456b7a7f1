"""Masking an agent's credentials out of text it caused to be printed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MASK = "[redacted]"
#: Shorter strings are too likely to occur by chance to be worth masking.
MIN_SECRET_LEN = 6
_SECRET_KEY = re.compile(r"(key|token|secret|password|passwd|authorization|credential)", re.I)
_BEARER = re.compile(r"^\s*(bearer|basic|token)\s+", re.I)


def mask_secrets(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of each secret in ``text``; longest first, so a secret
    that contains another is masked whole."""
    unique = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LEN}
    for secret in sorted(unique, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def secrets_in_config(config: Any) -> list[str]:
    """Every string value held under a secret-looking key, at any depth.

    ``Authorization: Bearer X`` yields both the header value and ``X``.
    """
    found: list[str] = []

    def walk(node: Any, secret_context: bool) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, secret_context or bool(_SECRET_KEY.search(str(key))))
        elif isinstance(node, list):
            for item in node:
                walk(item, secret_context)
        elif isinstance(node, str) and secret_context and node:
            found.append(node)
            bare = _BEARER.sub("", node)
            if bare != node:
                found.append(bare)

    walk(config, False)
    return found


def secrets_in_birth_file(path: Path) -> list[str]:
    """The secrets of the agent's birth config; none if it is missing or unreadable."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return secrets_in_config(config)
