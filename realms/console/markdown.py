"""Markdown an author wrote (a README, a SKILL.md), rendered for a page without trusting it.

Raw HTML in the source is shown as text, never passed through, and markdown-it refuses
``javascript:``-style link targets; so the result may be marked safe for the template.
"""

from __future__ import annotations

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark", {"html": False}).enable("table")


def render(text: str, *, below: int = 1) -> SafeString:
    """``text`` as HTML whose headings sit below the page's ``h{below}``: a README's own
    ``# title`` must not become a second top heading of the page."""
    tokens = _MD.parse(text)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + below)}"
    html: str = _MD.renderer.render(tokens, _MD.options, {})
    return mark_safe(html)  # noqa: S308 - raw HTML is off, so html holds none of the author's
