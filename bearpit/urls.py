from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from realms.api.docs import DocsView, SchemaView
from realms.api.login import login


def health(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("health", health, name="health"),
    path("login", login, name="login"),
    path("admin/", admin.site.urls),
    path("_matrix/app/v1/", include("realms.herald.urls")),
    path("api/schema/", SchemaView.as_view(), name="api-schema"),
    path("api/docs/", DocsView.as_view(), name="api-docs"),
    path("api/", include("realms.api.urls")),
    path("api/", include("ledger.urls")),
    path("", include("realms.console.urls")),
]
