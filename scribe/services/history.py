"""The history kept per scenario: what was asked, answered and proposed, across sessions."""

from __future__ import annotations

from django.db import transaction

from scribe.models import HistoryEntry, ScribeSession

SUMMARY_CHARS = 4000
KEPT_KINDS = ("user", "summary", "draft", "approved")


def record(session: ScribeSession, kind: str, text: str, name: str = "") -> None:
    HistoryEntry.objects.create(
        scenario=session.scenario, session=session, kind=kind, name=name[:120], text=text
    )


def _row(entry: HistoryEntry) -> dict[str, object]:
    return {
        "kind": entry.kind,
        "name": entry.name,
        "text": entry.text,
        "session_id": entry.session.session_id if entry.session else None,
        "at": entry.created_at.isoformat(),
    }


def entries(scenario: str) -> list[dict[str, object]]:
    return [
        _row(e) for e in HistoryEntry.objects.filter(scenario=scenario).select_related("session")
    ]


def of_session(session: ScribeSession) -> list[dict[str, object]]:
    return [_row(e) for e in session.history.select_related("session").order_by("id")]


@transaction.atomic
def clear(scenario: str) -> int:
    deleted, _ = HistoryEntry.objects.filter(scenario=scenario).delete()
    return deleted


@transaction.atomic
def summarize(scenario: str) -> HistoryEntry | None:
    """Fold the scenario's history into one summary line: what was asked and decided.

    The assistant's prose and tool chatter are dropped; requests, earlier summaries,
    proposals and approvals are kept, newest last, within ``SUMMARY_CHARS``.
    """
    rows = list(HistoryEntry.objects.filter(scenario=scenario).order_by("id"))
    if not rows:
        return None
    kept = [f"{row.kind}: {row.text.strip()}" for row in rows if row.kind in KEPT_KINDS]
    text = "\n".join(kept)
    if len(text) > SUMMARY_CHARS:
        text = "…" + text[-(SUMMARY_CHARS - 1) :]
    HistoryEntry.objects.filter(pk__in=[row.pk for row in rows]).delete()
    return HistoryEntry.objects.create(
        scenario=scenario, kind="summary", text=text or f"{len(rows)} earlier lines"
    )
