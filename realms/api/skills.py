"""``/api/skills…``: the skills library over HTTP.

Built-in skills ship with Bearpit and are read-only; user skills are the operator's own,
kept under ``BEARPIT_HOME/skills`` and named by an agent as ``{"source": "user", "ref"}``.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from realms.api.uploads import FilesMapJSONParser, TextField, ZipParser, folder_files, zip_bytes
from realms.library import skills
from realms.library.files import MAX_TOTAL_BYTES

MAX_SKILL_TEXT = 1024 * 1024


class SkillCreateSerializer(serializers.Serializer[dict[str, Any]]):
    ref = serializers.CharField(max_length=64)
    text = TextField(max_length=MAX_SKILL_TEXT, trim_whitespace=False)


def _card(skill: skills.Skill) -> dict[str, Any]:
    return {**skill.summary(), "files": sorted(skill.files())}


def _detail(skill: skills.Skill) -> dict[str, Any]:
    return {**_card(skill), "text": skill.text()}


def _refused(exc: skills.SkillError) -> Response:
    """The answer for a refused request; nothing was changed."""
    codes = {
        skills.NoSuchSkill: status.HTTP_404_NOT_FOUND,
        skills.SkillExists: status.HTTP_409_CONFLICT,
        skills.NotDeletable: status.HTTP_409_CONFLICT,
    }
    code = codes.get(type(exc), status.HTTP_400_BAD_REQUEST)
    return Response({"error": str(exc)}, status=code)


def _ref_param(request: Request) -> str:
    return request.query_params.get("ref", "")


class SkillListView(OperatorAPIView):
    parser_classes = [FilesMapJSONParser]

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response({"skills": [_card(skill) for skill in skills.list_skills()]})

    @extend_schema(request=SkillCreateSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        """A new user skill from its SKILL.md text."""
        serializer = SkillCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        body = serializer.validated_data
        try:
            skill = skills.create_skill(body["ref"], body["text"])
        except skills.SkillError as exc:
            return _refused(exc)
        return Response(_detail(skill), status=status.HTTP_201_CREATED)


class SkillDetailView(OperatorAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, source: str, ref: str) -> Response:
        try:
            return Response(_detail(skills.get_skill(source, ref)))
        except skills.SkillError as exc:
            return _refused(exc)


class SkillFileView(OperatorAPIView):
    """``?path=`` one file of the skill, as text; confined to the skill's folder."""

    @extend_schema(responses={(200, "text/plain"): OpenApiTypes.STR})
    def get(self, request: Request, source: str, ref: str) -> HttpResponse | Response:
        path = request.query_params.get("path", "")
        if not path:
            raise ValidationError({"path": "required: ?path=<a file of the skill>"})
        try:
            data = skills.read_skill_file(skills.get_skill(source, ref), path)
        except skills.SkillError as exc:
            return _refused(exc)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return HttpResponse(data, content_type="application/octet-stream")
        return HttpResponse(data, content_type="text/plain; charset=utf-8")


class SkillExportView(OperatorAPIView):
    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request: Request, source: str, ref: str) -> HttpResponse | Response:
        try:
            skill = skills.get_skill(source, ref)
            data = skills.export_zip(skill)
        except skills.SkillError as exc:
            return _refused(exc)
        response = HttpResponse(data, content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{skill.ref}.zip"'
        return response


class SkillDeleteView(OperatorAPIView):
    @extend_schema(responses={204: None})
    def delete(self, request: Request, ref: str) -> Response:
        try:
            skills.delete_skill(ref)
        except skills.SkillError as exc:
            return _refused(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _imported(skill: skills.Skill) -> Response:
    return Response(_detail(skill), status=status.HTTP_201_CREATED)


class SkillImportZipView(OperatorAPIView):
    """The zip as the body (or a multipart ``file``); ``?ref=`` or the SKILL.md's name."""

    parser_classes = [ZipParser, MultiPartParser]

    @extend_schema(request=OpenApiTypes.BINARY, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        data, upload_name = zip_bytes(request)
        try:
            skill = skills.import_zip(
                data, ref=_ref_param(request) or None, where=f"{upload_name or 'skill'}.zip"
            )
        except skills.SkillError as exc:
            return _refused(exc)
        return _imported(skill)


class SkillImportFolderView(OperatorAPIView):
    """A picked folder: multipart ``files`` with their relative ``paths``."""

    parser_classes = [MultiPartParser]

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        files = folder_files(request)
        try:
            ref = _ref_param(request) or skills.ref_for(files, where="folder")
            skill = skills.import_skill(files, ref=ref, where="folder")
        except skills.SkillError as exc:
            return _refused(exc)
        return _imported(skill)


class SkillImportFileView(OperatorAPIView):
    """One SKILL.md as a multipart ``file``; ``?ref=`` or the name in its front matter."""

    parser_classes = [MultiPartParser]

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"file": "send the SKILL.md as a multipart 'file'"})
        if upload.size and upload.size > MAX_TOTAL_BYTES:
            raise ValidationError({"file": "the file is larger than 5 MB"})
        files = {skills.SKILL_FILE: upload.read()}
        try:
            ref = _ref_param(request) or skills.ref_for(files, where=skills.SKILL_FILE)
            skill = skills.import_skill(files, ref=ref, where=skills.SKILL_FILE)
        except skills.SkillError as exc:
            return _refused(exc)
        return _imported(skill)
