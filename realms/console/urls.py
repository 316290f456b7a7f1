"""The console's pages (included at the site's root under the ``console`` namespace)."""

from __future__ import annotations

from django.urls import path

from realms.console.views import placeholder

app_name = "console"

urlpatterns = [
    path("", placeholder.home, name="home"),
    path("realms/<str:realm_id>/", placeholder.realm, name="realm"),
    path("scenarios/", placeholder.scenarios, name="scenarios"),
    path("skills/", placeholder.skills, name="skills"),
    path("history/", placeholder.history, name="history"),
    path("settings/", placeholder.settings_page, name="settings"),
]
