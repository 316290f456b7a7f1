"""The final report as HTML for the console, rendered safely.

The report quotes text the referee wrote. markdown-it runs with raw HTML off, so a tag
in that text comes out escaped, and its link check refuses ``javascript:`` and similar
URLs. Headings move down two levels: the report sits under the page's own ``h1`` and the
panel's ``h2``.
"""

from __future__ import annotations

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from chronicle.report import render_report

_SHIFT = 2


def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def markdown_html(text: str) -> str:
    md = _renderer()
    tokens = md.parse(text)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            level = min(6, int(token.tag[1]) + _SHIFT)
            token.tag = f"h{level}"
    return str(md.renderer.render(tokens, md.options, {}))


def report_html(realm_id: str) -> SafeString:
    """The realm's final report (``chronicle.report``) as HTML a template may insert:
    every character of the report's text was escaped by the renderer above."""
    return mark_safe(markdown_html(render_report(realm_id)))  # noqa: S308
