"""``manage.py access grant|token|revoke``: local users, their roles and API tokens (docs/design.md, "Access").

    access grant USER --role viewer|operator|admin (--namespaces a,b | --all-namespaces)
    access token USER [--expires-days N]     # prints ONLY the new token on stdout
    access revoke USER                       # revokes every token of USER

Bad input exits 2 with one line on stderr and writes nothing.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandParser

from gangweb.access import grants, tokens
from gangweb.access.scope import ROLES


class _OneLineParser(CommandParser):
    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


class Command(BaseCommand):
    help = "Grant roles to local users, issue and revoke their API tokens."

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.__class__ = _OneLineParser
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, parser_class=_OneLineParser)
        grant = sub.add_parser(
            "grant", help="create or update a user with a role", called_from_command_line=True
        )
        grant.add_argument("user")
        grant.add_argument("--role", required=True, choices=ROLES)
        where = grant.add_mutually_exclusive_group(required=True)
        where.add_argument("--namespaces", help="comma-separated namespaces the user may see")
        where.add_argument("--all-namespaces", action="store_true", help="every namespace")
        token = sub.add_parser(
            "token", help="print a new API token for a user", called_from_command_line=True
        )
        token.add_argument("user")
        token.add_argument("--expires-days", type=int, default=None, help="the token expires after N days")
        revoke = sub.add_parser(
            "revoke", help="revoke every API token of a user", called_from_command_line=True
        )
        revoke.add_argument("user")

    def handle(self, *args, action: str, user: str, **options) -> None:
        try:
            if action == "grant":
                self._grant(user, options)
            elif action == "token":
                self.stdout.write(tokens.issue(user, expires_days=options["expires_days"]))
            else:
                count = tokens.revoke(user)
                self.stdout.write(f"revoked {count} token{'s' if count != 1 else ''} of {user}")
        except (grants.GrantError, tokens.TokenError) as exc:
            sys.stderr.write(f"access {action}: error: {exc}\n")
            sys.exit(2)

    def _grant(self, user: str, options: dict) -> None:
        names = grants.parse_namespaces(options["namespaces"]) if options["namespaces"] is not None else None
        result = grants.grant(
            user, options["role"], namespaces=names, all_namespaces=options["all_namespaces"]
        )
        if result.created_user:
            self.stdout.write(
                f"created user {user}: {result.after} (set a password: manage.py changepassword {user})"
            )
        elif result.before == result.after:
            self.stdout.write(f"user {user} unchanged: {result.after}")
        else:
            self.stdout.write(f"updated user {user}: {result.before or 'no role'} -> {result.after}")
