"""Taking the provider key out of whatever the gateway relays from an upstream.

An upstream, or a proxy before it, may quote the credential it was sent, in an error or in
an answer. Every body the gateway relays, successful or not, streamed or not, goes through
here. What is caught: the key as written and with the slashes JSON may escape. An upstream
that encodes the key on purpose already holds it and is beyond what a relay can catch.
"""

from __future__ import annotations

import functools

MASK = "***"
_MASK_BYTES = MASK.encode()


@functools.lru_cache(maxsize=1024)
def _forms(secret: str) -> tuple[tuple[str, bytes], ...]:
    """The key as written, and with the slashes JSON may escape (as text and as bytes)."""
    forms = dict.fromkeys((secret, secret.replace("/", "\\/")))
    return tuple((form, form.encode()) for form in forms)


def scrub_bytes(body: bytes, secret: str | None) -> bytes:
    """``body`` without the provider key.

    A substring search or two when the key is absent, which is always but for an upstream
    (or a proxy before it) that quotes the request's credential back.
    """
    if not secret:
        return body
    for _, raw in _forms(secret):
        if raw in body:
            body = body.replace(raw, _MASK_BYTES)
    return body


def scrub_text(text: str, secret: str | None) -> str:
    if not secret:
        return text
    for form, _ in _forms(secret):
        if form in text:
            text = text.replace(form, MASK)
    return text
