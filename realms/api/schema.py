"""OpenAPI description of the operator token (drf-spectacular picks it up on import)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


class OperatorTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "bearpit.auth.OperatorTokenAuthentication"
    name = "operatorToken"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "The operator token (a browser sends it as the bearpit_token "
            "cookie that /login sets; a URL never carries it).",
        }


class OperatorSessionScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "bearpit.auth.OperatorSessionAuthentication"
    name = "operatorSession"

    def get_security_definition(self, auto_schema: AutoSchema) -> dict[str, Any]:
        return {"type": "apiKey", "in": "cookie", "name": "sessionid"}
