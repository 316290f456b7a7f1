"""``/api/realms…`` routes (included under ``api/`` by the project's URLconf)."""

from __future__ import annotations

from django.urls import path

from realms.api import (
    agent_view,
    batches,
    hosts,
    machine,
    outputs,
    packages,
    realms,
    runs,
    skills,
)

urlpatterns = [
    path("realms", realms.RealmListView.as_view(), name="api-realms"),
    path("hosts", hosts.HostListView.as_view(), name="api-hosts"),
    path("realms/<str:realm_id>", realms.RealmStatusView.as_view(), name="api-realm"),
    path(
        "realms/<str:realm_id>/transcript",
        realms.RealmTranscriptView.as_view(),
        name="api-realm-transcript",
    ),
    path("realms/<str:realm_id>/events", realms.RealmEventsView.as_view(), name="api-realm-events"),
    path("realms/<str:realm_id>/report", realms.RealmReportView.as_view(), name="api-realm-report"),
    path("realms/<str:realm_id>/stop", realms.RealmStopView.as_view(), name="api-realm-stop"),
    path("realms/<str:realm_id>/msg", realms.RealmMessageView.as_view(), name="api-realm-msg"),
    path("realms/<str:realm_id>/rerun", realms.RealmRerunView.as_view(), name="api-realm-rerun"),
    path(
        "realms/<str:realm_id>/outputs",
        outputs.RealmOutputsView.as_view(),
        name="api-realm-outputs",
    ),
    path(
        "realms/<str:realm_id>/outputs/<path:name>",
        outputs.RealmOutputFileView.as_view(),
        name="api-realm-output",
    ),
    path(
        "realms/<str:realm_id>/machine",
        machine.RealmMachineView.as_view(),
        name="api-realm-machine",
    ),
    path(
        "realms/<str:realm_id>/agents/<str:agent>/view",
        agent_view.AgentViewView.as_view(),
        name="api-realm-agent-view",
    ),
    path("runs", runs.RunsView.as_view(), name="api-runs"),
    path("batches", batches.BatchListView.as_view(), name="api-batches"),
    path("batches/<str:batch_id>", batches.BatchDetailView.as_view(), name="api-batch"),
    path("packages", packages.PackageListView.as_view(), name="api-packages"),
    path(
        "packages/import-zip", packages.PackageImportZipView.as_view(), name="api-packages-import"
    ),
    path("packages/import", packages.PackageImportView.as_view(), name="api-packages-folder"),
    path("packages/validate", packages.PackageValidateView.as_view(), name="api-packages-validate"),
    path("packages/<str:name>", packages.PackageDetailView.as_view(), name="api-package"),
    path(
        "packages/<str:name>/parameters",
        packages.PackageParametersView.as_view(),
        name="api-package-parameters",
    ),
    path(
        "packages/<str:name>/export",
        packages.PackageExportView.as_view(),
        name="api-package-export",
    ),
    path("skills", skills.SkillListView.as_view(), name="api-skills"),
    path("skills/import-zip", skills.SkillImportZipView.as_view(), name="api-skills-import-zip"),
    path(
        "skills/import-folder",
        skills.SkillImportFolderView.as_view(),
        name="api-skills-import-folder",
    ),
    path("skills/import-file", skills.SkillImportFileView.as_view(), name="api-skills-import-file"),
    path("skills/<str:ref>", skills.SkillDeleteView.as_view(), name="api-skill-delete"),
    path("skills/<str:source>/<str:ref>", skills.SkillDetailView.as_view(), name="api-skill"),
    path(
        "skills/<str:source>/<str:ref>/file", skills.SkillFileView.as_view(), name="api-skill-file"
    ),
    path(
        "skills/<str:source>/<str:ref>/export",
        skills.SkillExportView.as_view(),
        name="api-skill-export",
    ),
]
