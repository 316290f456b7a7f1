"""The console's pages (included at the site's root under the ``console`` namespace)."""

from __future__ import annotations

from django.urls import path

from realms.console.views import (
    agent_view,
    batches,
    editor,
    history,
    home,
    imports,
    launch,
    panels,
    realm,
    realm_actions,
    scenarios,
    settings,
    skills,
)

app_name = "console"

urlpatterns = [
    path("", home.home, name="home"),
    path("home/live", home.live, name="home-live"),
    path("home/launch-first-run", home.launch_first_run, name="launch-first-run"),
    path("realms/<str:realm_id>/", realm.realm, name="realm"),
    path("realms/<str:realm_id>/messages", realm.earlier_messages, name="realm-messages"),
    path("realms/<str:realm_id>/panels", panels.panels, name="realm-panels"),
    path("realms/<str:realm_id>/panels/machine", panels.machine, name="realm-machine"),
    path("realms/<str:realm_id>/message", realm_actions.message, name="realm-message"),
    path("realms/<str:realm_id>/stop", realm_actions.stop, name="realm-stop"),
    path("realms/<str:realm_id>/rerun", realm_actions.rerun, name="realm-rerun"),
    path("realms/<str:realm_id>/agents/<str:agent>/view", agent_view.view, name="agent-view"),
    path("scenarios/", scenarios.index, name="scenarios"),
    path("scenarios/new", editor.create, name="scenario_new"),
    path("scenarios/import", imports.import_package, name="scenario_import"),
    path("scenarios/<str:name>/", scenarios.preview, name="scenario"),
    path("scenarios/<str:name>/edit", editor.edit, name="scenario_edit"),
    path("scenarios/<str:name>/validate", editor.validate, name="scenario_validate"),
    path("scenarios/<str:name>/clone", editor.clone, name="scenario_clone"),
    path("scenarios/<str:name>/delete", editor.delete, name="scenario_delete"),
    path("scenarios/<str:name>/export", editor.export, name="scenario_export"),
    path("scenarios/<str:name>/launch", launch.launch, name="scenario_launch"),
    path("scenarios/<str:name>/forecast", launch.forecast, name="scenario_forecast"),
    path("scenarios/<str:name>/batch", batches.start, name="scenario_batch"),
    path("skills/", skills.index, name="skills"),
    path("skills/import", skills.import_skill, name="skill_import"),
    path("skills/<str:source>/<str:ref>/", skills.detail, name="skill"),
    path("skills/<str:source>/<str:ref>/export", skills.export, name="skill_export"),
    path("skills/user/<str:ref>/delete", skills.delete, name="skill_delete"),
    path("history/", history.history, name="history"),
    path("history/<str:realm_id>/report", history.report, name="history-report"),
    path("history/<str:realm_id>/transcript", history.transcript, name="history-transcript"),
    path("history/<str:realm_id>/rerun", history.rerun, name="history-rerun"),
    path("batches/", batches.index, name="batches"),
    path("batches/<str:batch_id>/", batches.detail, name="batch"),
    path("batches/<str:batch_id>/live", batches.live, name="batch-live"),
    path("settings/", settings.settings_page, name="settings"),
    path("settings/provider", settings.provider, name="settings-provider"),
    path("settings/tiers/<str:name>", settings.tiers, name="settings-tiers"),
    path("settings/keys", settings.add_key, name="settings-key-add"),
    path("settings/keys/<str:handle>/rotate", settings.rotate_key, name="settings-key-rotate"),
    path("settings/keys/<str:handle>/remove", settings.remove_key, name="settings-key-remove"),
]
