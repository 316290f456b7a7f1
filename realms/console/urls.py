"""The console's pages (included at the site's root under the ``console`` namespace)."""

from __future__ import annotations

from django.urls import path

from realms.console.views import panels, placeholder, realm, realm_actions

app_name = "console"

urlpatterns = [
    path("", placeholder.home, name="home"),
    path("realms/<str:realm_id>/", realm.realm, name="realm"),
    path("realms/<str:realm_id>/messages", realm.earlier_messages, name="realm-messages"),
    path("realms/<str:realm_id>/panels", panels.panels, name="realm-panels"),
    path("realms/<str:realm_id>/panels/machine", panels.machine, name="realm-machine"),
    path("realms/<str:realm_id>/message", realm_actions.message, name="realm-message"),
    path("realms/<str:realm_id>/stop", realm_actions.stop, name="realm-stop"),
    path("realms/<str:realm_id>/rerun", realm_actions.rerun, name="realm-rerun"),
    path("scenarios/", placeholder.scenarios, name="scenarios"),
    path("skills/", placeholder.skills, name="skills"),
    path("history/", placeholder.history, name="history"),
    path("settings/", placeholder.settings_page, name="settings"),
]
