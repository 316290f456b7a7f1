"""The console's pages (included at the site's root under the ``console`` namespace)."""

from __future__ import annotations

from django.urls import path

from realms.console.views import (
    editor,
    imports,
    launch,
    panels,
    placeholder,
    realm,
    realm_actions,
    scenarios,
    skills,
)

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
    path("scenarios/", scenarios.index, name="scenarios"),
    path("skills/", skills.index, name="skills"),
    path("history/", placeholder.history, name="history"),
    path("settings/", placeholder.settings_page, name="settings"),
    path("scenarios/new", editor.create, name="scenario_new"),
    path("scenarios/import", imports.import_package, name="scenario_import"),
    path("scenarios/<str:name>/", scenarios.preview, name="scenario"),
    path("scenarios/<str:name>/edit", editor.edit, name="scenario_edit"),
    path("scenarios/<str:name>/validate", editor.validate, name="scenario_validate"),
    path("scenarios/<str:name>/clone", editor.clone, name="scenario_clone"),
    path("scenarios/<str:name>/delete", editor.delete, name="scenario_delete"),
    path("scenarios/<str:name>/export", editor.export, name="scenario_export"),
    path("scenarios/<str:name>/launch", launch.launch, name="scenario_launch"),
    path("skills/import", skills.import_skill, name="skill_import"),
    path("skills/<str:source>/<str:ref>/", skills.detail, name="skill"),
    path("skills/<str:source>/<str:ref>/export", skills.export, name="skill_export"),
    path("skills/user/<str:ref>/delete", skills.delete, name="skill_delete"),
]
