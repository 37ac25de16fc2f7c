"""Which ``manage.py`` commands are offline: they read files and print, and serve nothing.

``gangweb/settings.py`` asks ``offline_command(sys.argv)`` before its guards: a SECRET_KEY and the demo's
refusal beside real parts protect a running service, so an offline command (``gang plan`` on a dump in a
shell where ``KUBECONFIG`` is set) starts without them, and with no database at all.
"""

from __future__ import annotations

from pathlib import Path

# Command, and the subcommands of it that are offline (None: all of them).
OFFLINE_COMMANDS: dict[str, frozenset[str] | None] = {
    "gang": None,  # plan, replay, and bench (an alias of bench engine)
    "bench": frozenset({"engine"}),
}
ENTRY_POINTS = frozenset({"manage.py", "django-admin", "gangweb"})


def offline_command(argv: list[str]) -> bool:
    """Whether ``argv`` (a process's ``sys.argv``) runs an offline command through ``manage.py`` (or the ``gangweb`` command)."""
    if len(argv) < 2 or Path(argv[0]).name not in ENTRY_POINTS:
        return False
    if argv[1] not in OFFLINE_COMMANDS:
        return False
    subcommands = OFFLINE_COMMANDS[argv[1]]
    return subcommands is None or (len(argv) > 2 and argv[2] in subcommands)
