#!/usr/bin/env python
"""Django's command-line utility for Bearpit."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bearpit.settings")
    from django.core.management import execute_from_command_line

    from bearpit.startup import settings_or_exit

    # --settings names another module: Django reads it, and reports its errors itself.
    if not any(arg.startswith(("--settings", "--pythonpath")) for arg in sys.argv[1:]):
        settings_or_exit("manage.py")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
