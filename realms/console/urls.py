"""The console's pages (included at the site's root under the ``console`` namespace)."""

from __future__ import annotations

from django.urls import path

from realms.console.views import history, home, placeholder, realm, settings

app_name = "console"

urlpatterns = [
    path("", home.home, name="home"),
    path("home/live", home.live, name="home-live"),
    path("home/launch-first-run", home.launch_first_run, name="launch-first-run"),
    path("realms/<str:realm_id>/", realm.realm, name="realm"),
    path("realms/<str:realm_id>/messages", realm.earlier_messages, name="realm-messages"),
    path("scenarios/", placeholder.scenarios, name="scenarios"),
    path("skills/", placeholder.skills, name="skills"),
    path("history/", history.history, name="history"),
    path("history/<str:realm_id>/report", history.report, name="history-report"),
    path("history/<str:realm_id>/transcript", history.transcript, name="history-transcript"),
    path("history/<str:realm_id>/rerun", history.rerun, name="history-rerun"),
    path("settings/", settings.settings_page, name="settings"),
    path("settings/provider", settings.provider, name="settings-provider"),
    path("settings/tiers/<str:name>", settings.tiers, name="settings-tiers"),
    path("settings/keys", settings.add_key, name="settings-key-add"),
    path("settings/keys/<str:handle>/rotate", settings.rotate_key, name="settings-key-rotate"),
    path("settings/keys/<str:handle>/remove", settings.remove_key, name="settings-key-remove"),
]
