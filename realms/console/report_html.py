"""The final report as HTML for the console, rendered safely.

The report quotes text the referee wrote. markdown-it runs with raw HTML off, so a tag
in that text comes out escaped, and its link check refuses ``javascript:`` and similar
URLs. The report's own title is left out (the panel is headed "Final report" on a page
named after the realm) and its sections move down one level, under the panel's ``h2``.
"""

from __future__ import annotations

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token

from chronicle.report import render_report


def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def _without_title(tokens: list[Token]) -> list[Token]:
    if len(tokens) >= 3 and tokens[0].type == "heading_open" and tokens[0].tag == "h1":
        return tokens[3:]
    return tokens


def markdown_html(text: str) -> str:
    """``text`` as HTML: escaped throughout, its title dropped, headings one level down."""
    md = _renderer()
    tokens = _without_title(md.parse(text))
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + 1)}"
        # A link in the report is one an agent wrote: it gets no referrer and no opener.
        for child in token.children or []:
            if child.type == "link_open":
                child.attrSet("rel", "nofollow noopener noreferrer")
    return str(md.renderer.render(tokens, md.options, {}))


def report_html(realm_id: str) -> SafeString:
    """The realm's final report (``chronicle.report``) as HTML a template may insert:
    every character of the report's text was escaped by the renderer above."""
    return mark_safe(markdown_html(render_report(realm_id)))  # noqa: S308
