"""Request bodies the library takes besides plain JSON: a zip, a folder, a large files map."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.core.files.uploadedfile import UploadedFile
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import BaseParser
from rest_framework.request import Request

from bearpit.jsonbody import BoundedJSONParser
from realms.library.files import MAX_FILES, MAX_TOTAL_BYTES

# A files map carries a whole package, JSON-escaped: room for the library's 5 MB and the
# escaping of a text-heavy package, but no more.
MAX_FILES_BODY_BYTES = 2 * MAX_TOTAL_BYTES


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


class FilesMapJSONParser(BoundedJSONParser):
    """The API's JSON checks, with room for a whole package's files."""

    max_bytes = MAX_FILES_BODY_BYTES


class TextField(serializers.CharField):
    """Text sent as a JSON string, never a number turned into one."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


def zip_bytes(request: Request) -> tuple[bytes, str]:
    """The archive of an import-zip request and the name its upload carried (if any)."""
    upload = request.FILES.get("file")
    if upload is not None:
        if upload.size and upload.size > MAX_TOTAL_BYTES:
            raise ValidationError({"file": "the archive is larger than 5 MB"})
        return upload.read(), (upload.name or "").removesuffix(".zip")
    if isinstance(request.data, bytes):
        return request.data, ""
    raise ValidationError({"file": "send the zip as application/zip or a multipart file"})


def form_text(request: Request, key: str) -> str:
    data = request.data
    value = data.get(key) if isinstance(data, Mapping) else None
    return value if isinstance(value, str) else ""


def folder_files(request: Request) -> dict[str, bytes]:
    """A folder upload: multipart ``files``, with a ``paths`` entry per file, in order.

    Browsers keep a picked folder's relative paths, but Django keeps only the last part of
    an upload's file name, so the paths travel beside the files.
    """
    uploads: list[UploadedFile[bytes]] = request.FILES.getlist("files")
    paths: list[str] = request.data.getlist("paths") if hasattr(request.data, "getlist") else []
    if not uploads:
        raise ValidationError({"files": "send the folder's files as multipart 'files'"})
    if len(uploads) > MAX_FILES:
        raise ValidationError({"files": f"more than {MAX_FILES} files"})
    if len(paths) != len(uploads):
        raise ValidationError(
            {"paths": f"expected one path per file ({len(uploads)}); got {len(paths)}"}
        )
    total = 0
    files: dict[str, bytes] = {}
    for path, upload in zip(paths, uploads, strict=True):
        total += upload.size or 0
        if total > MAX_TOTAL_BYTES:
            raise ValidationError({"files": "the folder is larger than 5 MB"})
        if path in files:
            raise ValidationError({"paths": f"{path}: appears twice"})
        files[path] = upload.read()
    return files
