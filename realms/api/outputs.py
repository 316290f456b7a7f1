"""``/api/realms/{id}/outputs``: the files a realm's teardown captured, from its archive.

Only regular files inside the archive's ``outputs/`` folder are listed or served: a path
with ``..``, an absolute path or one through a symlink never leaves that folder. A file is
always an attachment with ``nosniff``: agents wrote it, and a browser must not render it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from django.http import FileResponse, HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from realms.api import serializers as s
from realms.api.common import known, not_found
from realms.api.fields import parse_query
from realms.forge import layout

_CHUNK = 1 << 16


def outputs_root(realm_id: str) -> Path:
    return layout.archive_dir(realm_id) / "outputs"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _files(root: Path) -> list[tuple[str, Path, int]]:
    """(relative name, path, size) of every regular file, symlinks neither listed nor
    followed."""
    found: list[tuple[str, Path, int]] = []
    if root.is_symlink() or not root.is_dir():
        return found
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not (Path(folder) / d).is_symlink())
        for name in sorted(names):
            path = Path(folder) / name
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                found.append((path.relative_to(root).as_posix(), path, info.st_size))
    return sorted(found)


def captured_files(realm_id: str) -> list[tuple[str, int]]:
    """``(name, size)`` of each file the realm's teardown captured, for pages that link to
    the download route."""
    return [(name, size) for name, _, size in _files(outputs_root(realm_id))]


def _confined(root: Path, name: str) -> Path:
    """The file ``name`` inside ``root``; 400 for a path that tries to leave it, 404 for
    one that is not a regular file reached without a symlink."""
    if not name or "\x00" in name or "\\" in name:
        raise ValidationError({"path": "expected a file path inside the realm's outputs"})
    pure = PurePosixPath(name)
    if pure.is_absolute() or name.startswith("/"):
        raise ValidationError({"path": f"{name!r}: an absolute path; give one inside outputs/"})
    if any(part in ("..", ".") for part in name.split("/")) or "" in name.split("/"):
        raise ValidationError({"path": f"{name!r}: '..', '.' and empty parts are not allowed"})
    missing = not_found(f"no output {name!r} in this realm's archive")
    current = root
    for part in (None, *pure.parts):
        if part is not None:
            current = current / part
        try:
            info = current.lstat()
        except OSError:
            raise missing from None
        if stat.S_ISLNK(info.st_mode):
            raise missing
    if not stat.S_ISREG(current.lstat().st_mode):
        raise missing
    return current


class RealmOutputsView(OperatorAPIView):
    """The files the realm's teardown captured into its archive."""

    @extend_schema(operation_id="realm_outputs_list", responses={200: s.Outputs, 404: s.Error})
    def get(self, request: Request, realm_id: str) -> Response:
        known(realm_id)
        parse_query(s.EmptyRequest, request.query_params)
        rows = [
            {
                "name": name,
                "size": size,
                "sha256": _sha256(path),
                "url": f"/api/realms/{realm_id}/outputs/{quote(name)}",
            }
            for name, path, size in _files(outputs_root(realm_id))
        ]
        return Response({"realm_id": realm_id, "outputs": rows})


class RealmOutputFileView(OperatorAPIView):
    """One captured file, as an attachment."""

    @extend_schema(
        operation_id="realm_output_download",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY),
            400: s.Problems,
            404: s.Error,
        },
    )
    def get(self, request: Request, realm_id: str, name: str) -> HttpResponseBase:
        known(realm_id)
        parse_query(s.EmptyRequest, request.query_params)
        path = _confined(outputs_root(realm_id), name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            raise not_found(f"no output {name!r} in this realm's archive") from None
        response = FileResponse(
            os.fdopen(fd, "rb"),
            as_attachment=True,
            filename=path.name,
            content_type="application/octet-stream",
        )
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        return response
