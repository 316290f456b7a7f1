"""``/api/packages…``: the scenario library over HTTP.

User copies shadow the bundled examples of the same name; saving always writes a user
copy and examples cannot be deleted. A package that does not load is never saved over a
good one: the answer lists every located problem instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from realms.api.uploads import (
    FilesMapJSONParser,
    TextField,
    ZipParser,
    folder_files,
    form_text,
    zip_bytes,
)
from realms.library import files as trees
from realms.library import services
from realms.models import Scenario


def _files_field(*, required: bool = True) -> serializers.DictField:
    return serializers.DictField(
        child=TextField(allow_blank=True, trim_whitespace=False),
        allow_empty=False,
        required=required,
        help_text="Relative path → the file's text.",
    )


class FilesMapSerializer(serializers.Serializer[dict[str, Any]]):
    files = _files_field()


class PackageCreateSerializer(serializers.Serializer[dict[str, Any]]):
    name = serializers.CharField(max_length=120)
    files = _files_field(required=False)
    clone_of = serializers.CharField(max_length=120, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("files" in attrs) == ("clone_of" in attrs):
            raise ValidationError({"body": "give exactly one of files (a files map) or clone_of"})
        return attrs


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


def _valid(serializer: serializers.Serializer[dict[str, Any]]) -> dict[str, Any]:
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _tree(files: Mapping[str, str]) -> dict[str, bytes]:
    try:
        return services.tree_from_texts(files, where="files")
    except services.LibraryError as exc:
        raise ValidationError({"files": str(exc)}) from exc


def _refused(exc: services.LibraryError) -> Response:
    """The answer for a refused write; nothing was changed."""
    if isinstance(exc, services.InvalidPackage):
        body = {"error": str(exc), "errors": exc.errors, "warnings": exc.warnings}
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, services.NoSuchScenario):
        return Response({"error": str(exc)}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, services.ScenarioExists | services.NotDeletable):
        return Response({"error": str(exc)}, status=status.HTTP_409_CONFLICT)
    return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)


def _saved(scenario: Scenario, code: int) -> Response:
    return Response({**_card(scenario), "validation": scenario.validation}, status=code)


class PackageListView(OperatorAPIView):
    parser_classes = [FilesMapJSONParser]

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        services.sync_examples()
        return Response({"packages": [_card(s) for s in services.list_scenarios()]})

    @extend_schema(request=PackageCreateSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        """A new user scenario from a files map, or a copy of one in the library."""
        body = _valid(PackageCreateSerializer(data=request.data))
        services.sync_examples()
        try:
            if "clone_of" in body:
                scenario = services.clone_scenario(body["name"], body["clone_of"])
            else:
                scenario = services.create_scenario(
                    body["name"], _tree(body["files"]), origin="created"
                )
        except services.LibraryError as exc:
            return _refused(exc)
        return _saved(scenario, status.HTTP_201_CREATED)


class PackageDetailView(OperatorAPIView):
    parser_classes = [FilesMapJSONParser]

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

    @extend_schema(request=FilesMapSerializer, responses={200: OpenApiTypes.OBJECT})
    def put(self, request: Request, name: str) -> Response:
        """Save the whole package into the user's copy; refused unless it loads cleanly."""
        body = _valid(FilesMapSerializer(data=request.data))
        files = _tree(body["files"])
        services.sync_examples()
        try:
            scenario = services.save_user_copy(name, files)
        except services.LibraryError as exc:
            return _refused(exc)
        return _saved(scenario, status.HTTP_200_OK)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, name: str) -> Response:
        services.sync_examples()
        try:
            services.delete_user_copy(name)
        except services.LibraryError as exc:
            return _refused(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PackageValidateView(OperatorAPIView):
    """Validate a files map without keeping it; every problem with its file, line and path."""

    parser_classes = [FilesMapJSONParser]

    @extend_schema(request=FilesMapSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        body = _valid(FilesMapSerializer(data=request.data))
        return Response(services.check_tree(_tree(body["files"])))


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


class PackageImportView(OperatorAPIView):
    """A picked folder: multipart ``files`` with their relative ``paths``, and ``name``.

    Without a name, the folder's own name (the paths' shared first part) is used.
    """

    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        files = folder_files(request)
        name = form_text(request, "name")
        try:
            checked = trees.check_tree(files, where="folder")
        except trees.PackageTreeError as exc:
            raise ValidationError({"paths": str(exc)}) from exc
        top, checked = trees.strip_common_folder(checked)
        name = name or top or ""
        if not name:
            raise ValidationError({"name": "required when the files share no folder"})
        try:
            scenario = services.import_tree(checked, name=name, origin="folder upload")
        except services.LibraryError as exc:
            raise ValidationError({"files": str(exc)}) from exc
        return _saved(scenario, status.HTTP_201_CREATED)


class PackageImportZipView(OperatorAPIView):
    """Body: the zip itself (``Content-Type: application/zip``) or a multipart ``file``."""

    parser_classes = [ZipParser, MultiPartParser]

    @extend_schema(request=OpenApiTypes.BINARY, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        data, upload_name = zip_bytes(request)
        name = request.query_params.get("name", "") or upload_name
        if not name:
            raise ValidationError({"name": "required: ?name=… or a multipart file with a name"})
        try:
            scenario = services.import_zip(data, name=name, origin="api upload")
        except services.LibraryError as exc:
            raise ValidationError({"file": str(exc)}) from exc
        return _saved(scenario, status.HTTP_201_CREATED)
