"""``manage.py notify``: notification sinks and their deliveries (docs/notifications.md).

    notify add NAME --kind cloudevents|slack|alertmanager --url URL (--namespaces a,b | --all-namespaces)
               [--kinds plan.created,eviction]
    notify list [-o table|wide|json|yaml]
    notify remove NAME
    notify deliveries [--sink NAME] [--state pending|delivered|gave_up] [--limit N] [-o ...]

Bad input exits 2 with one line on stderr and writes nothing.
"""

from __future__ import annotations

import json
import sys

import yaml
from django.core.management.base import BaseCommand, CommandParser

from gangweb.notify import config
from gangweb.notify.models import DeliveryState, Sink, SinkKind
from gangweb.notify.sinks import SinkError
from scheduler.argtypes import add_output, at_least_one


class _OneLineParser(CommandParser):
    def error(self, message: str):
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


class Command(BaseCommand):
    help = "Add, list and remove notification sinks; show their deliveries and every attempt."

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.__class__ = _OneLineParser
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, parser_class=_OneLineParser)
        add = sub.add_parser("add", help="add a sink with its route", called_from_command_line=True)
        add.add_argument("name")
        add.add_argument("--kind", required=True, choices=SinkKind.values)
        add.add_argument("--url", required=True, help="http(s), to a host in GANGWEB_NOTIFY_ALLOWED_HOSTS")
        where = add.add_mutually_exclusive_group(required=True)
        where.add_argument("--namespaces", help="comma-separated namespaces whose events the sink gets")
        where.add_argument("--all-namespaces", action="store_true", help="every namespace's events")
        add.add_argument(
            "--kinds", default="", help="comma-separated ledger event kinds (default: every kind)"
        )
        listing = sub.add_parser("list", help="the sinks", called_from_command_line=True)
        add_output(listing)
        remove = sub.add_parser(
            "remove", help="remove a sink and its deliveries", called_from_command_line=True
        )
        remove.add_argument("name")
        shown = sub.add_parser("deliveries", help="deliveries, newest first", called_from_command_line=True)
        shown.add_argument("--sink")
        shown.add_argument("--state", choices=DeliveryState.values)
        shown.add_argument("--limit", type=at_least_one, default=50)
        add_output(shown)

    def handle(self, *args, action: str, **options) -> None:
        try:
            getattr(self, f"_{action}")(options)
        except SinkError as exc:
            sys.stderr.write(f"notify {action}: error: {exc}\n")
            sys.exit(2)

    def _add(self, options: dict) -> None:
        names = options["namespaces"].split(",") if options["namespaces"] is not None else []
        if options["namespaces"] is not None and not any(n.strip() for n in names):
            raise SinkError("--namespaces needs at least one namespace")
        sink = config.add_sink(
            options["name"],
            kind=options["kind"],
            url=options["url"],
            namespaces=names,
            all_namespaces=options["all_namespaces"],
            kinds=options["kinds"].split(","),
        )
        self.stdout.write(f"added sink {sink.name}: {sink.kind} to {sink.url} for {_route(sink)}")

    def _list(self, options: dict) -> None:
        rows = [config.describe_sink(s) for s in Sink.objects.order_by("name")]
        if self._structured(rows, options["output"]):
            return
        wide = options["output"] == "wide"
        head = ["NAME", "KIND", "ROUTE", "PENDING", "DELIVERED", "GAVE_UP"] + (
            ["URL", "KINDS"] if wide else []
        )
        table = [
            [
                r["name"],
                r["kind"],
                "*" if r["route"]["allNamespaces"] else ",".join(r["route"]["namespaces"]),
                str(r["deliveries"]["pending"]),
                str(r["deliveries"]["delivered"]),
                str(r["deliveries"]["gave_up"]),
            ]
            + ([r["url"], ",".join(r["kinds"]) or "*"] if wide else [])
            for r in rows
        ]
        self._table(head, table)

    def _remove(self, options: dict) -> None:
        count = config.remove_sink(options["name"])
        self.stdout.write(f"removed sink {options['name']} and its {count} deliveries")

    def _deliveries(self, options: dict) -> None:
        found = config.deliveries(options["sink"], options["state"])[: options["limit"]]
        rows = [config.describe_delivery(d, list(d.attempt_rows.all())) for d in found]
        if self._structured(rows, options["output"]):
            return
        head = ["ID", "SINK", "KIND", "STATE", "ATTEMPTS", "EVENT", "LAST ERROR"]
        table = [
            [
                str(r["id"]),
                r["sink"],
                r["kind"],
                r["state"],
                str(len(r["attempts"])),
                r["eventId"],
                r["lastError"][:60],
            ]
            for r in rows
        ]
        self._table(head, table)

    def _structured(self, rows: list, output: str) -> bool:
        if output == "json":
            self.stdout.write(json.dumps(rows, indent=2))
        elif output == "yaml":
            self.stdout.write(yaml.safe_dump(rows, sort_keys=False).rstrip())
        else:
            return False
        return True

    def _table(self, head: list[str], rows: list[list[str]]) -> None:
        widths = [max(len(str(c)) for c in column) for column in zip(head, *rows, strict=False)]
        for row in [head, *rows]:
            self.stdout.write("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _route(sink: Sink) -> str:
    return "all namespaces" if sink.all_namespaces else "namespaces " + ",".join(sink.namespaces)
