"""``python manage.py webhook certs|config|serve``: TLS, registration, the server.

``manage.py webhook bench`` is a deprecated alias of ``manage.py bench webhook`` (``bench/webhook.py``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from pathlib import Path

import yaml
from django.conf import settings
from django.core.management import get_commands, load_command_class
from django.core.management.base import BaseCommand, CommandError, CommandParser

from admission import certs
from scheduler.argtypes import at_least_one, port

DEFAULT_SERVICE = "gangweb-webhook"


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name, "")
    return Path(value) if value else None


def _namespace() -> str:
    return getattr(settings, "GANGWEB_NAMESPACE", "gangweb-system")


def _dump(objects: list[dict], output_format: str) -> str:
    if output_format == "json":
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2) + "\n"
    return yaml.safe_dump_all(objects, sort_keys=False)


def _usage_error(message: str) -> CommandError:
    # Exit status 2, as for other bad input to gangweb's commands (docs/design.md: `gang plan`).
    return CommandError(message, returncode=2)


class Command(BaseCommand):
    help = "Admission webhook: issue certificates, print its configuration, serve it over HTTPS."

    def add_arguments(self, parser: CommandParser) -> None:
        from admission.server import READ_TIMEOUT_SECONDS

        sub = parser.add_subparsers(dest="action", required=True)

        cert_parser = sub.add_parser("certs", help="create or renew the CA and serving certificate")
        cert_parser.add_argument(
            "--dir", type=Path, default=Path("var/webhook-certs"), help="where the PEM files live"
        )
        cert_parser.add_argument("--service", default=DEFAULT_SERVICE)
        cert_parser.add_argument("--namespace", default=None, help="default: GANGWEB_NAMESPACE")
        cert_parser.add_argument("--days", type=int, default=365, help="serving certificate lifetime")
        cert_parser.add_argument("--ca-days", type=int, default=3650)
        cert_parser.add_argument("--renew-before-days", type=int, default=30)
        cert_parser.add_argument("--force", action="store_true", help="issue new ones even if still valid")
        cert_parser.add_argument(
            "--secret", metavar="NAME", help="also print a kubernetes.io/tls Secret manifest"
        )
        cert_parser.add_argument(
            "--client-cert",
            metavar="NAME",
            help="also issue (or keep) client.crt/client.key for kube-apiserver, CommonName NAME (e.g. kube-apiserver), "
            "signed by the same CA: serve with --client-ca DIR/ca.crt --client-name NAME",
        )

        config_parser = sub.add_parser("config", help="print the Mutating/ValidatingWebhookConfiguration")
        config_parser.add_argument("--ca-file", type=Path, default=Path("var/webhook-certs") / certs.CA_CERT)
        config_parser.add_argument("--service", default=DEFAULT_SERVICE)
        config_parser.add_argument("--namespace", default=None, help="default: GANGWEB_NAMESPACE")
        config_parser.add_argument("--port", type=port, default=443, help="the Service port")
        config_parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
        config_parser.add_argument(
            "--without-ca-bundle",
            action="store_true",
            help="leave caBundle out (deploy/base: the cert-manager or self-signed overlay injects it)",
        )

        serve_parser = sub.add_parser(
            "serve", help="serve the webhook over HTTPS (reloads renewed certificates)"
        )
        serve_parser.add_argument(
            "--dir",
            type=Path,
            default=Path("var/webhook-certs"),
            help="holds tls.crt and tls.key (e.g. a mounted kubernetes.io/tls Secret)",
        )
        serve_parser.add_argument("--cert", type=Path, help="serving certificate file (default: DIR/tls.crt)")
        serve_parser.add_argument("--key", type=Path, help="its private key file (default: DIR/tls.key)")
        serve_parser.add_argument("--host", default="0.0.0.0")
        serve_parser.add_argument("--port", type=port, default=8443)
        serve_parser.add_argument("--workers", type=at_least_one, default=1)
        serve_parser.add_argument(
            "--bench-echo", action="store_true", help="also serve /bench/echo (benchmark only)"
        )
        serve_parser.add_argument("--log-level", default="warning")
        serve_parser.add_argument(
            "--client-ca",
            type=Path,
            default=_env_path("GANGWEB_WEBHOOK_CLIENT_CA"),
            help="answer the webhook paths only for clients presenting a certificate signed by this CA "
            "(kube-apiserver, see docs/admission.md); default: GANGWEB_WEBHOOK_CLIENT_CA",
        )
        serve_parser.add_argument(
            "--client-name",
            action="append",
            default=None,
            metavar="NAME",
            help="with --client-ca: the client certificate must also name NAME (CommonName or DNS SAN); repeatable; "
            "default: GANGWEB_WEBHOOK_CLIENT_NAMES (comma-separated)",
        )
        serve_parser.add_argument(
            "--read-timeout",
            type=float,
            default=READ_TIMEOUT_SECONDS,
            help="seconds a request may take to arrive whole, headers and body, and a TLS handshake to finish "
            f"(default {READ_TIMEOUT_SECONDS:g})",
        )

        # Only listed here: `webhook bench ...` is caught in run_from_argv and runs as `bench webhook ...`.
        sub.add_parser("bench", help="deprecated alias of `manage.py bench webhook`", add_help=False)

    def run_from_argv(self, argv):
        if argv[2:3] == ["bench"]:
            return _run_bench_webhook(argv)
        return super().run_from_argv(argv)

    def handle(self, *args, **options) -> None:
        action = options["action"]
        getattr(self, f"_{action}")(options)

    def _certs(self, options: dict) -> None:
        namespace = options["namespace"] or _namespace()
        for option, least in (("days", 1), ("ca_days", 1), ("renew_before_days", 0)):
            if options[option] < least:
                raise _usage_error(
                    f"--{option.replace('_', '-')} must be at least {least}, got {options[option]}"
                )
        try:
            result = certs.ensure_certificates(
                options["dir"],
                options["service"],
                namespace,
                days=options["days"],
                ca_days=options["ca_days"],
                renew_before=dt.timedelta(days=options["renew_before_days"]),
                force=options["force"],
            )
        except certs.CertificateError as error:
            raise _usage_error(str(error)) from None
        stderr = self.stderr
        stderr.write(
            f"CA {'issued' if result.issued_ca else 'kept'} (valid until {result.ca.cert.not_valid_after_utc:%Y-%m-%d}); "
            f"serving certificate {'issued' if result.issued_serving else 'kept'} for "
            f"{', '.join(certs.dns_names(options['service'], namespace))} "
            f"(valid until {result.serving.cert.not_valid_after_utc:%Y-%m-%d}) in {options['dir']}"
        )
        if result.issued_ca:
            stderr.write("the CA changed: re-apply `manage.py webhook config` so caBundle matches")
        if options["client_cert"]:
            try:
                client, issued = certs.ensure_client_certificate(
                    options["dir"],
                    result.ca,
                    options["client_cert"],
                    days=options["days"],
                    renew_before=dt.timedelta(days=options["renew_before_days"]),
                    force=options["force"],
                )
            except certs.CertificateError as error:
                raise _usage_error(str(error)) from None
            stderr.write(
                f"client certificate {'issued' if issued else 'kept'} for {options['client_cert']} (valid until "
                f"{client.cert.not_valid_after_utc:%Y-%m-%d}): {options['dir'] / certs.CLIENT_CERT}, "
                f"{options['dir'] / certs.CLIENT_KEY}; kube-apiserver presents it (docs/admission.md)"
            )
        if options["secret"]:
            self.stdout.write(
                yaml.safe_dump(certs.secret_manifest(result, options["secret"], namespace), sort_keys=False)
            )

    def _config(self, options: dict) -> None:
        from admission.webhookconfig import webhook_configurations

        try:
            certs.check_service_and_namespace(options["service"], options["namespace"] or _namespace())
        except certs.CertificateError as error:
            raise _usage_error(str(error)) from None
        ca_pem = None
        if not options["without_ca_bundle"]:
            try:
                ca_pem = options["ca_file"].read_bytes()
            except OSError as error:
                raise CommandError(
                    f"cannot read the CA certificate {options['ca_file']}: {error.strerror}; "
                    "run `manage.py webhook certs` first"
                ) from None
        objects = webhook_configurations(
            service=options["service"],
            namespace=options["namespace"] or _namespace(),
            ca_pem=ca_pem,
            port=options["port"],
        )
        self.stdout.write(_dump(objects, options["output"]), ending="")

    def _serve(self, options: dict) -> None:
        from admission.runtime import get_webhook, podgroup_watch
        from admission.server import serve

        directory: Path = options["dir"]
        certfile = options["cert"] or directory / certs.TLS_CERT
        keyfile = options["key"] or directory / certs.TLS_KEY
        missing = [str(path) for path in (certfile, keyfile) if not path.exists()]
        if missing:
            raise CommandError(
                f"missing {', '.join(missing)}; run `manage.py webhook certs --dir {directory}`"
            )
        client_ca: Path | None = options["client_ca"]
        names = options["client_name"]
        if names is None:
            names = [
                name for name in os.environ.get("GANGWEB_WEBHOOK_CLIENT_NAMES", "").split(",") if name.strip()
            ]
        client_names = frozenset(name.strip() for name in names)
        if client_ca is not None:
            problem = certs.client_ca_problem(client_ca)
            if problem:
                raise _usage_error(f"--client-ca {client_ca}: {problem}")
        elif client_names:
            raise _usage_error(
                "--client-name needs --client-ca (the CA that signs kube-apiserver's client certificate)"
            )
        if not options["read_timeout"] > 0:
            raise _usage_error(f"--read-timeout must be more than 0 seconds, got {options['read_timeout']:g}")
        from scheduler.cluster import ClusterError

        webhook = get_webhook()
        try:
            watch = podgroup_watch(webhook.podgroups)
        except ClusterError as error:
            raise CommandError(f"cannot watch PodGroups for the validating webhook: {error}") from None
        callers = (
            (
                f"clients with a certificate from {client_ca}"
                + (f" naming {', '.join(sorted(client_names))}" if client_names else "")
            )
            if client_ca
            else "any client (no --client-ca)"
        )
        self.stderr.write(
            f"gangweb webhook serving https://{options['host']}:{options['port']} "
            f"({options['workers']} worker(s), certificate {certfile}); webhook paths answer {callers}; "
            f"PodGroups {'watched from the API' if watch else 'not watched (no cluster)'}"
        )
        sys.stderr.flush()
        serve(
            webhook,
            host=options["host"],
            port=options["port"],
            certfile=certfile,
            keyfile=keyfile,
            workers=options["workers"],
            echo=options["bench_echo"],
            log_level=options["log_level"],
            client_ca=client_ca,
            client_names=client_names,
            read_timeout=options["read_timeout"],
            on_start=watch.start if watch is not None else None,
            ready=lambda: webhook.podgroups.synced,
        )

    def _bench(
        self, options: dict
    ) -> None:  # `webhook bench` without its own options, reached past run_from_argv
        _run_bench_webhook([sys.argv[0], "webhook", "bench"])


def _run_bench_webhook(argv: list[str]) -> None:
    """``manage.py webhook bench [options]`` as ``manage.py bench webhook [options]`` (the same parser and code)."""
    bench = load_command_class(get_commands()["bench"], "bench")
    bench.run_as_alias(argv, "webhook bench", "webhook", skip=3)
