"""Websocket routes. Apps add their consumers here."""

from __future__ import annotations

from typing import Any

from django.urls import path

from realms.console.consumers import RealmConsumer

websocket_urlpatterns: list[Any] = [
    path("ws/realms/<str:realm_id>/", RealmConsumer.as_asgi()),
]
