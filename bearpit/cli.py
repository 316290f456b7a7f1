"""The ``pit`` console script: ``pit VERB …`` runs ``manage.py pit_VERB …``.

Users of the reference CLI keep their habits (``pit validate PATH``, ``pit up PATH``,
``pit keys add HANDLE``) while every verb is an ordinary Django management command.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path

from bearpit import __version__


def _verbs() -> dict[str, str]:
    """Each verb and the app whose ``pit_<verb>`` command it runs."""
    from django.core.management import get_commands

    return {
        name.removeprefix("pit_"): app
        for name, app in sorted(get_commands().items())
        if name.startswith("pit_")
    }


def _help_line(app: str, verb: str) -> str:
    """The first line of the command's ``help``, read from its source: importing every
    command would import the whole platform (several seconds) to print a list."""
    spec = importlib.util.find_spec(f"{app}.management.commands.pit_{verb}")
    if spec is None or spec.origin is None:
        return ""
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Command":
            for item in node.body:
                if (
                    isinstance(item, ast.Assign)
                    and isinstance(item.targets[0], ast.Name)
                    and item.targets[0].id == "help"
                ):
                    text = str(ast.literal_eval(item.value)).strip()
                    return text.splitlines()[0] if text else ""
    return ""


def usage(verbs: dict[str, str]) -> str:
    lines = {verb: _help_line(app, verb) for verb, app in verbs.items()}
    width = max(len(verb) for verb in lines)
    listed = "\n".join(
        f"  {verb.ljust(width)}  {text}".rstrip() for verb, text in sorted(lines.items())
    )
    return "usage: pit VERB [ARGS…]   (pit VERB --help for its arguments)\n\nverbs:\n" + listed


def version_line() -> str:
    return f"bearpit {__version__}"


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bearpit.settings")
    if args and args[0] in ("version", "--version"):
        print(version_line())  # without Django: the one verb that needs nothing
        return

    import django

    from bearpit.startup import settings_or_exit

    settings_or_exit("pit")
    django.setup()
    verbs = _verbs()
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage(verbs))
        return
    verb = args[0].replace("-", "_")
    if verb not in verbs:
        known = ", ".join(verbs)
        print(f"pit: unknown verb {args[0]!r}; known: {known}", file=sys.stderr)
        raise SystemExit(2)

    from django.core.management import execute_from_command_line

    execute_from_command_line(["pit", f"pit_{verb}", *args[1:]])


if __name__ == "__main__":
    main()
