"""The ``gangweb`` command: Django's management commands with gangweb's settings preset.

An installed package has no ``manage.py``; this is the same entry point, so ``gangweb migrate``,
``gangweb demo`` and ``gangweb webhook serve`` work wherever the package is installed.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gangweb.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
