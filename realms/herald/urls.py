"""Application-service routes, mounted at ``/_matrix/app/v1/``."""

from __future__ import annotations

from django.urls import path

from realms.herald import views

urlpatterns = [
    path("transactions/<str:txn_id>", views.push_transaction, name="herald-transaction"),
    path("ping", views.ping, name="herald-ping"),
    path("users/<str:identifier>", views.not_ours, name="herald-user-query"),
    path("rooms/<str:identifier>", views.not_ours, name="herald-alias-query"),
]
