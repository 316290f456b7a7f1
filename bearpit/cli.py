"""The ``pit`` console script: ``pit VERB …`` runs ``manage.py pit_VERB …``.

Users of the reference CLI keep their habits (``pit validate PATH``, ``pit up PATH``,
``pit keys add HANDLE``) while every verb is an ordinary Django management command.
"""

from __future__ import annotations

import os
import sys

from bearpit import __version__


def _verbs() -> list[str]:
    from django.core.management import get_commands

    return sorted(name.removeprefix("pit_") for name in get_commands() if name.startswith("pit_"))


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bearpit.settings")
    if args and args[0] in ("version", "--version"):
        print(f"bearpit {__version__}")
        return

    import django

    django.setup()
    verbs = _verbs()
    if not args or args[0] in ("-h", "--help", "help"):
        print("usage: pit VERB [ARGS…]\n\nverbs:\n  " + "\n  ".join([*verbs, "version"]))
        return
    verb = args[0].replace("-", "_")
    if verb not in verbs:
        print(f"pit: unknown verb {args[0]!r}; known: {', '.join(verbs)}", file=sys.stderr)
        raise SystemExit(2)

    from django.core.management import execute_from_command_line

    execute_from_command_line(["pit", f"pit_{verb}", *args[1:]])


if __name__ == "__main__":
    main()
