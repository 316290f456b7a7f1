"""Zip archives that are broken in one specific way each, built byte by byte.

Every one of them once made the library's import answer 500; the importer must refuse
each with a message naming the member at fault.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable

PROJECT = b'{"metadata": {"name": "Tiny"}}'
AGENT = b'{"id": "solo"}'
PERSONA = b"You are solo, and you say so at length. " * 20


def good(extra: dict[str, bytes] | None = None, *, stored: bool = False) -> bytes:
    buffer = io.BytesIO()
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        archive.writestr("project.json", PROJECT)
        archive.writestr("agents/solo/agent.json", AGENT)
        archive.writestr("agents/solo/persona.md", PERSONA)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _central_entries(data: bytes) -> list[int]:
    """Offsets of the central-directory headers."""
    found, at = [], data.find(b"PK\x01\x02")
    while at != -1:
        found.append(at)
        at = data.find(b"PK\x01\x02", at + 4)
    return found


def _local_entries(data: bytes) -> list[int]:
    found, at = [], data.find(b"PK\x03\x04")
    while at != -1:
        found.append(at)
        at = data.find(b"PK\x03\x04", at + 4)
    return found


def _patch(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    size = struct.calcsize(fmt)
    return data[:offset] + struct.pack(fmt, value) + data[offset + size :]


def bad_crc() -> bytes:
    data = good(stored=True)
    at = data.index(PERSONA)
    return data[:at] + b"X" + data[at + 1 :]


def encrypted() -> bytes:
    data = good()
    for local in _local_entries(data):
        flags = struct.unpack_from("<H", data, local + 6)[0]
        data = _patch(data, local + 6, "<H", flags | 0x1)
    for central in _central_entries(data):
        flags = struct.unpack_from("<H", data, central + 8)[0]
        data = _patch(data, central + 8, "<H", flags | 0x1)
    return data


def deflate64() -> bytes:
    data = good()
    for local in _local_entries(data):
        data = _patch(data, local + 8, "<H", 9)
    for central in _central_entries(data):
        data = _patch(data, central + 10, "<H", 9)
    return data


def _renamed(old: bytes, new: bytes, *, utf8_flag: bool = False) -> bytes:
    assert len(old) == len(new)
    data = good({old.decode(): b"hello"}).replace(old, new)
    if utf8_flag:
        for central in _central_entries(data):
            flags = struct.unpack_from("<H", data, central + 8)[0]
            data = _patch(data, central + 8, "<H", flags | 0x800)
    return data


def invalid_utf8_name() -> bytes:
    return _renamed(b"agents/solo/notes.md", b"agents/solo/n\xff\xfees.md", utf8_flag=True)


def nul_name() -> bytes:
    return _renamed(b"agents/solo/notes.md", b"agents/solo/no\x00es.md")


def nul_first_name() -> bytes:
    return _renamed(b"agents/solo/notes.md", b"\x00gents/solo/notes.md")


def truncated_member() -> bytes:
    data = good()
    central = _central_entries(data)[2]  # agents/solo/persona.md, deflated
    size = struct.unpack_from("<I", data, central + 20)[0]
    return _patch(data, central + 20, "<I", size // 2)


def file_and_folder() -> bytes:
    return good({"agents/solo/skills": b"a file", "agents/solo/skills/x.md": b"a file inside"})


def long_name() -> bytes:
    return good({"agents/solo/" + "n" * 300 + ".md": b"long"})


def long_path() -> bytes:
    deep = "/".join(["d" * 200] * 6)
    return good({f"agents/solo/{deep}/x.md": b"deep"})


BROKEN: dict[str, tuple[Callable[[], bytes], str]] = {
    "bad-crc": (bad_crc, "agents/solo/persona.md"),
    "encrypted": (encrypted, "encrypted"),
    "deflate64": (deflate64, "compression"),
    "invalid-utf8-name": (invalid_utf8_name, "UTF-8"),
    "nul-name": (nul_name, "NUL"),
    "nul-first-name": (nul_first_name, "NUL"),
    "truncated": (truncated_member, "agents/solo/persona.md"),
    "file-and-folder": (file_and_folder, "agents/solo/skills"),
    "300-char-name": (long_name, "255"),
    "long-path": (long_path, "1024"),
}
