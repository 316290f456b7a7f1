"""Filters the console's pages share: money and durations written the same way everywhere."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def usd(value: object) -> str:
    """``$0.0123``: four decimals under a dollar (runs cost cents), two above."""
    try:
        amount = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "—"
    return f"${amount:,.2f}" if abs(amount) >= 1 else f"${amount:.4f}"


@register.filter
def duration(seconds: object) -> str:
    """``4s``, ``2m 05s``, ``1h 02m``; a dash when there is none yet."""
    if seconds is None or isinstance(seconds, bool):
        return "—"
    try:
        total = int(float(seconds))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "—"
    hours, rest = divmod(max(total, 0), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"
