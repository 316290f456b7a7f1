"""``/api/scribe/*`` routes."""

from __future__ import annotations

from django.urls import path

from scribe import api

urlpatterns = [
    path("scribe/session", api.SessionCreateView.as_view(), name="scribe-session"),
    path(
        "scribe/session/<str:session_id>",
        api.SessionDetailView.as_view(),
        name="scribe-session-detail",
    ),
    path("scribe/message", api.MessageView.as_view(), name="scribe-message"),
    path("scribe/approve", api.ApproveView.as_view(), name="scribe-approve"),
    path("scribe/history/<str:scenario>", api.HistoryView.as_view(), name="scribe-history"),
    path(
        "scribe/history/<str:scenario>/summarize",
        api.HistorySummarizeView.as_view(),
        name="scribe-history-summarize",
    ),
]
