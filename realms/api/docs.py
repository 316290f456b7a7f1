"""``/api/schema/`` (the OpenAPI 3 document) and ``/api/docs/`` (Swagger UI over it).

Both need the operator like every other ``/api/`` route: one rule for the whole prefix,
with no public exceptions to keep track of, and the docs page is only of use to someone
who may call the API anyway (its "Try it out" sends the browser's session, and the CSRF
token on writes). The page's scripts and stylesheets are the copies that
drf-spectacular-sidecar installs, served from ``/static/``: it works with no network.
"""

from __future__ import annotations

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from bearpit.auth import OperatorAPIView


class SchemaView(OperatorAPIView, SpectacularAPIView):
    """The OpenAPI 3 document (YAML; JSON with ``?format=json``)."""


class DocsView(OperatorAPIView, SpectacularSwaggerView):
    """Swagger UI over :class:`SchemaView`, from local assets."""

    url_name = "api-schema"
