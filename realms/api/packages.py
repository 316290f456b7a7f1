"""``/api/packages…``: the scenario library over HTTP.

User copies shadow the bundled examples of the same name; saving always writes a user
copy and examples cannot be deleted.
"""

from __future__ import annotations

from typing import IO, Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import BaseParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from realms.library import services
from realms.library.files import MAX_TOTAL_BYTES
from realms.models import Scenario


class ZipParser(BaseParser):
    """Takes the request body as the archive's bytes, capped at the library's limit."""

    media_type = "application/zip"

    # DRF hands whatever a parser returns to the view as request.data; the stubs only
    # know the form parsers' mapping types.
    def parse(  # type: ignore[override]
        self, stream: IO[Any], media_type: str | None = None, parser_context: Any = None
    ) -> bytes:
        data = stream.read(MAX_TOTAL_BYTES + 1) if stream is not None else b""
        if len(data) > MAX_TOTAL_BYTES:
            raise ValidationError({"file": "the archive is larger than 5 MB"})
        return bytes(data)


def _card(scenario: Scenario) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    result = services.load_scenario(scenario)
    if result.project is not None:
        metadata = result.project.metadata.model_dump(mode="json")
    return {
        "name": scenario.name,
        "source": scenario.source,
        "title": scenario.title,
        "description": metadata.get("description"),
        "tags": metadata.get("tags", []),
        "category": metadata.get("category"),
        "agents": [agent.id for agent in result.project.agents] if result.project else [],
        "valid": scenario.valid,
        "editable": scenario.source == Scenario.Source.USER,
    }


def _scenario(name: str) -> Scenario:
    try:
        return services.resolve(name)
    except services.LibraryError as exc:
        raise NotFound(str(exc)) from exc


class PackageListView(OperatorAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        services.sync_examples()
        return Response({"packages": [_card(s) for s in services.list_scenarios()]})


class PackageDetailView(OperatorAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, name: str) -> Response:
        scenario = _scenario(name)
        result = services.load_scenario(scenario)
        return Response(
            {
                **_card(scenario),
                "validation": result.as_dict(),
                "project": result.project.model_dump(mode="json") if result.project else None,
                "files": sorted(f.path for f in scenario.files.all()),
            }
        )

    @extend_schema(responses={204: None})
    def delete(self, request: Request, name: str) -> Response:
        try:
            services.delete_user_copy(name)
        except services.LibraryError as exc:
            raise NotFound(str(exc)) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)


class PackageParametersView(OperatorAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, name: str) -> Response:
        result = services.load_scenario(_scenario(name))
        return Response({"parameters": [param.as_dict() for param in result.parameters]})


class PackageExportView(OperatorAPIView):
    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request: Request, name: str) -> HttpResponse:
        scenario = _scenario(name)
        response = HttpResponse(services.export_zip(scenario), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{scenario.name}.zip"'
        return response


class PackageImportZipView(OperatorAPIView):
    """Body: the zip itself (``Content-Type: application/zip``) or a multipart ``file``."""

    parser_classes = [ZipParser, MultiPartParser]

    @extend_schema(request=OpenApiTypes.BINARY, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        name = request.query_params.get("name", "")
        upload = request.FILES.get("file")
        if upload is not None:
            if upload.size and upload.size > MAX_TOTAL_BYTES:
                raise ValidationError({"file": "the archive is larger than 5 MB"})
            data = upload.read()
            name = name or (upload.name or "").removesuffix(".zip")
        elif isinstance(request.data, bytes):
            data = request.data
        else:
            raise ValidationError({"file": "send the zip as application/zip or a multipart file"})
        if not name:
            raise ValidationError({"name": "required: ?name=… or a multipart file with a name"})
        try:
            scenario = services.import_zip(data, name=name, origin="api upload")
        except services.LibraryError as exc:
            raise ValidationError({"file": str(exc)}) from exc
        body = {**_card(scenario), "validation": scenario.validation}
        return Response(body, status=status.HTTP_201_CREATED)
