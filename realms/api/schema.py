"""How the API describes itself in OpenAPI: operation ids and the two ways in.

``REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]`` names :class:`OperatorAutoSchema`, so loading
it registers the authentication extensions below before any schema is generated.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

from bearpit.auth import LOGIN_PATH

_CAMEL_BOUNDARY = re.compile(r"(?<!^)(?=[A-Z])")


class OperatorAutoSchema(AutoSchema):
    def get_operation_id(self) -> str:
        """``<view>_<method>`` (``RealmListView.get`` → ``realm_list_get``).

        The default derives the id from the path without its parameters, so a list and
        its detail route (``/realms``, ``/realms/{id}``) would share one; view classes
        are unique per route.
        """
        name = type(self.view).__name__.removesuffix("View")
        return f"{_CAMEL_BOUNDARY.sub('_', name).lower()}_{self.method.lower()}"


class OperatorTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "bearpit.auth.OperatorTokenAuthentication"
    name = "operatorToken"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "The operator token: BEARPIT_API_TOKEN, or the one generated into "
            "$BEARPIT_HOME/api-token. Never in a URL: a ?token= query is refused.",
        }


class OperatorSessionScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "bearpit.auth.OperatorSessionAuthentication"
    name = "operatorSession"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": settings.SESSION_COOKIE_NAME,
            "description": f"The operator's browser session, started by {LOGIN_PATH}?token=…; "
            "a write also needs the CSRF token in the X-CSRFToken header.",
        }
