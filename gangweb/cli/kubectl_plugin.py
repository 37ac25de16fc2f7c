"""``kubectl gangweb``: gangweb's API v1 from the shell, as the user the current kubeconfig context names.

An HTTP client only (no Django, no database): it reads the kubeconfig (``KUBECONFIG`` or ``~/.kube/config``),
finds gangweb's URL and the context's credentials, and calls ``/api/v1/`` with ``Authorization: Bearer``;
gangweb checks a Kubernetes token with a TokenReview (docs/design.md "Access"). docs/cli.md is the manual:
where the URL comes from, each subcommand's endpoint, the output formats and the exit codes.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

PROG = "kubectl gangweb"
# Exit codes (docs/cli.md, docs/design.md "Contract: kubectl gangweb").
OK, API_ERROR, USAGE, NOT_FOUND, DENIED = 0, 1, 2, 3, 4
OUTPUTS = ("table", "wide", "json", "yaml")
POLICIES = ("gangweb", "kep5710", "legacy")
# The context extension that names gangweb's URL: contexts[].context.extensions[] {name, extension: {server}}.
EXTENSION = "gangweb"
TIMEOUT_SECONDS = 60.0


class Failure(Exception):
    """One line on stderr and this exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


# --- kubeconfig -----------------------------------------------------------------------------------


def _kubeconfig_path(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit)
    for part in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if part and Path(part).exists():
            return Path(part)
    default = Path.home() / ".kube" / "config"
    return default if default.exists() else None


def _named(items: Any, name: str, what: str) -> dict:
    for item in items or []:
        if isinstance(item, dict) and item.get("name") == name:
            return item.get(what) or {}
    return {}


class Target:
    """Where gangweb answers and how to sign in there: from the flags, the environment, the kubeconfig."""

    def __init__(self, args: argparse.Namespace) -> None:
        config, context = self._context(args)
        self.server = (
            args.server or os.environ.get("GANGWEB_SERVER") or _extension_server(context) or ""
        ).rstrip("/")
        if not self.server:
            raise Failure(
                "no gangweb URL: pass --server URL, set GANGWEB_SERVER, or add the context extension "
                f"'{EXTENSION}' with {{server: URL}} to the kubeconfig (docs/cli.md)",
                USAGE,
            )
        if urllib.parse.urlsplit(self.server).scheme not in ("http", "https"):
            raise Failure(f"--server: expected an http:// or https:// URL, got {self.server!r}", USAGE)
        user = _named(config.get("users"), context.get("user", ""), "user") if context else {}
        self.token = args.token or os.environ.get("GANGWEB_TOKEN") or _token_of(user)
        self.ssl = _ssl_context(args)

    @staticmethod
    def _context(args: argparse.Namespace) -> tuple[dict, dict]:
        path = _kubeconfig_path(args.kubeconfig)
        if path is None:
            return {}, {}
        try:
            config = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise Failure(f"cannot read the kubeconfig {path}: {' '.join(str(exc).split())}", USAGE) from None
        if not isinstance(config, dict):
            raise Failure(f"the kubeconfig {path} is not a mapping", USAGE)
        name = args.context or config.get("current-context") or ""
        context = _named(config.get("contexts"), name, "context")
        if args.context and not context:
            raise Failure(f"--context: no context {args.context!r} in {path}", USAGE)
        return config, context


def _extension_server(context: dict) -> str:
    extension = _named(context.get("extensions"), EXTENSION, "extension")
    return str(extension.get("server") or "") if isinstance(extension, dict) else ""


def _token_of(user: dict) -> str:
    """The bearer token of a kubeconfig user: ``token``, ``tokenFile``, or what its ``exec`` plugin prints."""
    if user.get("token"):
        return str(user["token"])
    if user.get("tokenFile"):
        try:
            return Path(user["tokenFile"]).read_text().strip()
        except OSError as exc:
            raise Failure(f"cannot read the token file {user['tokenFile']}: {exc.strerror}", USAGE) from None
    exec_ = user.get("exec")
    if isinstance(exec_, dict) and exec_.get("command"):
        env = {**os.environ, **{e["name"]: e["value"] for e in exec_.get("env") or [] if "name" in e}}
        try:
            done = subprocess.run(
                [exec_["command"], *(exec_.get("args") or [])],
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_SECONDS,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Failure(f"the kubeconfig's exec credential plugin failed: {exc}", API_ERROR) from None
        if done.returncode != 0:
            raise Failure(
                f"the exec credential plugin exited {done.returncode}: {done.stderr.strip()}", API_ERROR
            )
        try:
            return str(json.loads(done.stdout)["status"]["token"])
        except (ValueError, KeyError, TypeError):
            raise Failure(
                "the exec credential plugin printed no ExecCredential with status.token", API_ERROR
            ) from None
    return ""


def _ssl_context(args: argparse.Namespace) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=args.certificate_authority)
    if args.insecure_skip_tls_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


# --- HTTP -----------------------------------------------------------------------------------------


def call(target: Target, method: str, path: str, params: dict | None = None, body: Any = None) -> Any:
    """One API v1 call; a problem+json answer becomes a ``Failure`` with its detail and the exit code."""
    query = urllib.parse.urlencode({k: v for k, v in (params or {}).items() if v not in (None, "")})
    url = f"{target.server}/api/v1/{path}" + (f"?{query}" if query else "")
    headers = {"Accept": "application/json"}
    if target.token:
        headers["Authorization"] = f"Bearer {target.token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS, context=target.ssl) as answer:
            return json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise _problem(exc) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Failure(f"cannot reach gangweb at {target.server}: {reason}", API_ERROR) from None
    except ValueError:
        raise Failure(f"{url} answered something that is not JSON", API_ERROR) from None


def _problem(exc: urllib.error.HTTPError) -> Failure:
    try:
        problem = json.loads(exc.read())
    except ValueError:
        problem = {}
    detail = problem.get("detail") or problem.get("title") or exc.reason
    errors = problem.get("errors") or {}
    if errors:
        detail += " (" + "; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in errors.items()) + ")"
    code = {401: DENIED, 403: DENIED, 404: NOT_FOUND}.get(
        exc.code, USAGE if exc.code in (400, 413) else API_ERROR
    )
    return Failure(f"{exc.code} {detail}", code)


def _all_pages(target: Target, path: str, params: dict, limit: int | None) -> list[dict]:
    """The ``results`` of a paged list: every page, or the first ``limit`` rows."""
    rows: list[dict] = []
    offset = 0
    while True:
        page_size = min(1000, limit - len(rows)) if limit else 1000
        page = call(target, "GET", path, {**params, "limit": page_size, "offset": offset})
        rows.extend(page["results"])
        offset += len(page["results"])
        if not page.get("next") or not page["results"] or (limit and len(rows) >= limit):
            return rows


# --- output ---------------------------------------------------------------------------------------

Column = tuple[str, Callable[[dict], Any]]


def _get(*keys: str) -> Callable[[dict], Any]:
    def read(row: dict) -> Any:
        value: Any = row
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    return read


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "<none>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def table(rows: list[dict], columns: Sequence[Column]) -> str:
    cells = [[name for name, _ in columns]] + [[_cell(read(row)) for _, read in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "\n".join("   ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells) + "\n"


def emit(output: str, data: Any, rows: list[dict], columns: Sequence[Column], wide: Sequence[Column]) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    elif output == "yaml":
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False))
    elif not rows:
        sys.stderr.write("No resources found.\n")
    else:
        sys.stdout.write(table(rows, [*columns, *wide] if output == "wide" else columns))


def _ago(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return "<none>"
    seconds = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# --- subcommands ----------------------------------------------------------------------------------

PENDING = [
    ("POSITION", _get("position")),
    ("NAMESPACE", _get("namespace")),
    ("NAME", _get("name")),
    ("STAGE", _get("stage")),
    ("PRIORITY", _get("priority")),
    ("GPUS", _get("gpus")),
    ("WAITING", lambda r: _ago(r.get("waitingSeconds"))),
]
PENDING_WIDE = [
    ("MIN", _get("minCount")),
    ("PENDING-PODS", _get("pendingPods")),
    ("REQUEST", _get("request")),
    ("REASON", _get("reason")),
]
LEDGER = [
    ("ID", _get("id")),
    ("KIND", _get("kind")),
    ("PODGROUP", _get("podGroup")),
    ("REQUEST", _get("request")),
    ("CREATED", _get("createdAt")),
]
LEDGER_WIDE = [("PLAN", _get("plan")), ("MESSAGE", _get("message"))]
PLANS = [
    ("POLICY", _get("policy")),
    ("FEASIBLE", _get("feasible")),
    ("OUTCOME", _get("outcome")),
    ("DOMAIN", _get("domain")),
    ("EVICTED-PODS", _get("cost", "evictedPods")),
    ("EVICTED-GPUS", _get("cost", "evictedGpus")),
    ("VICTIM-UNITS", _get("cost", "victimUnits")),
]
PLANS_WIDE = [
    ("PDB-VIOLATIONS", _get("cost", "pdbViolations")),
    ("LOST-GPU-SECONDS", _get("cost", "lostGpuSeconds")),
    ("SUMMARY", _get("summary")),
]
EXPLAIN = [
    ("NAMESPACE", _get("namespace")),
    ("NAME", _get("name")),
    ("STATE", _get("state")),
    ("PODS", lambda r: f"{r.get('placedPods')}/{r.get('minCount')}"),
    ("GPUS", lambda r: f"{r.get('placedGpus')}/{r.get('gpus')}"),
    ("WAITING", lambda r: _ago(r.get("waitingSeconds"))),
    ("REASON", _get("reason")),
]
EXPLAIN_WIDE = [
    ("REQUEST", _get("verdict", "request")),
    ("VERDICT", _get("verdict", "state")),
    ("OUTCOME", _get("verdict", "outcome")),
    ("RETRY-AT", _get("verdict", "retryAt")),
]


def _podgroup(text: str) -> tuple[str, str]:
    namespace, _, name = text.partition("/")
    if not namespace or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"expected NAMESPACE/NAME, got {text!r}")
    return namespace, name


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _snapshot(path: str | None) -> Any:
    if path is None:
        return None
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except (OSError, yaml.YAMLError) as exc:
        raise Failure(f"--snapshot: cannot read {path}: {' '.join(str(exc).split())}", USAGE) from None
    if len(documents) == 1:
        return documents[0]
    return {"apiVersion": "v1", "kind": "List", "items": documents}


def run_pending(target: Target, args: argparse.Namespace) -> None:
    rows = _all_pages(target, "pending/", {"namespace": args.namespace}, args.limit)
    emit(args.output, rows, rows, PENDING, PENDING_WIDE)


def run_ledger(target: Target, args: argparse.Namespace) -> None:
    params = {"namespace": args.namespace, "kind": args.kind, "request": args.request}
    if args.podgroup:
        params["podgroup"] = "/".join(args.podgroup)
    rows = _all_pages(target, "ledger/", params, args.limit)
    emit(args.output, rows, rows, LEDGER, LEDGER_WIDE)


def run_explain(target: Target, args: argparse.Namespace) -> None:
    namespace, name = args.podgroup
    row = call(target, "GET", f"podgroups/{urllib.parse.quote(namespace)}/{urllib.parse.quote(name)}/")
    emit(args.output, row, [row], EXPLAIN, EXPLAIN_WIDE)


def _simulate(target: Target, args: argparse.Namespace, policies: list[str]) -> dict:
    body: dict[str, Any] = {"podGroup": "/".join(args.podgroup), "policies": policies}
    snapshot = _snapshot(args.snapshot)
    if snapshot is not None:
        body["snapshot"] = snapshot
    return call(target, "POST", "simulate/", body=body)


def run_plan(target: Target, args: argparse.Namespace) -> None:
    answer = _simulate(target, args, [args.policy])
    plan = answer["plans"][0]
    emit(args.output, plan, [plan], PLANS, PLANS_WIDE)


def run_whatif(target: Target, args: argparse.Namespace) -> None:
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = [p for p in policies if p not in POLICIES]
    if not policies or unknown or len(set(policies)) != len(policies):
        raise Failure(
            f"--policies: expected distinct names from {','.join(POLICIES)}, got {args.policies!r}", USAGE
        )
    answer = _simulate(target, args, policies)
    emit(args.output, answer, answer["plans"], PLANS, PLANS_WIDE)


SUBCOMMANDS = ("plan", "explain", "whatif", "pending", "ledger", "completion")


def completion(shell: str) -> str:
    """A completion script for ``kubectl-gangweb`` and ``kubectl gangweb`` (kubectl 1.26+ asks the plugin's
    ``kubectl_complete-gangweb``, which this script's function also serves)."""
    words = " ".join(SUBCOMMANDS)
    options = "-o --output --server --token --kubeconfig --context --insecure-skip-tls-verify --certificate-authority"
    script = f"""# kubectl gangweb completion ({shell}); docs/cli.md
_kubectl_gangweb() {{
    local cur prev
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    case "$prev" in
        -o|--output) COMPREPLY=($(compgen -W "{" ".join(OUTPUTS)}" -- "$cur")); return ;;
        --policy) COMPREPLY=($(compgen -W "{" ".join(POLICIES)}" -- "$cur")); return ;;
        completion) COMPREPLY=($(compgen -W "bash zsh" -- "$cur")); return ;;
        --snapshot|--kubeconfig|--certificate-authority) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "{options} --namespace --limit --policy --policies --snapshot --kind --podgroup --request" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "{words}" -- "$cur"))
    fi
}}
complete -F _kubectl_gangweb kubectl-gangweb
"""
    if shell == "zsh":
        script = "autoload -U +X bashcompinit && bashcompinit\n" + script
    return script


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-o", "--output", choices=OUTPUTS, default="table", help="table (default), wide, json, yaml"
    )
    common.add_argument(
        "--server", help="gangweb's URL (default: GANGWEB_SERVER, then the context's extension)"
    )
    common.add_argument("--token", help="bearer token (default: GANGWEB_TOKEN, then the context's user)")
    common.add_argument("--kubeconfig", help="kubeconfig file (default: KUBECONFIG, then ~/.kube/config)")
    common.add_argument("--context", help="kubeconfig context (default: its current-context)")
    common.add_argument(
        "--insecure-skip-tls-verify", action="store_true", help="do not check gangweb's certificate"
    )
    common.add_argument("--certificate-authority", help="CA file that signed gangweb's certificate")

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="gangweb's API v1 as the current kubeconfig context's user (docs/cli.md).",
        epilog="exit codes: 0 ok, 1 gangweb failed or unreachable, 2 usage or bad input, 3 not found, 4 not allowed",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(SUBCOMMANDS) + "}")
    plan = sub.add_parser(
        "plan", parents=[common], help="the plan gangweb would make for a gang now (POST simulate/)"
    )
    plan.add_argument("podgroup", type=_podgroup, metavar="NAMESPACE/NAME")
    plan.add_argument("--policy", choices=POLICIES, default="gangweb")
    plan.add_argument(
        "--snapshot", help="plan on this snapshot file (YAML or JSON; - reads stdin), not the live cluster"
    )
    explain = sub.add_parser(
        "explain", parents=[common], help="a gang's state, reason and verdict (GET podgroups/NS/NAME/)"
    )
    explain.add_argument("podgroup", type=_podgroup, metavar="NAMESPACE/NAME")
    whatif = sub.add_parser(
        "whatif", parents=[common], help="the plans of several policies side by side (POST simulate/)"
    )
    whatif.add_argument("podgroup", type=_podgroup, metavar="NAMESPACE/NAME")
    whatif.add_argument("--policies", default=",".join(POLICIES), help="comma-separated (default: all)")
    whatif.add_argument("--snapshot", help="a snapshot file instead of the live cluster")
    pending = sub.add_parser(
        "pending", parents=[common], help="waiting gangs in the order gangweb serves them (GET pending/)"
    )
    pending.add_argument("-n", "--namespace", help="only these namespaces (a,b)")
    pending.add_argument("--limit", type=_limit, help="at most this many rows (default: all)")
    ledger = sub.add_parser(
        "ledger", parents=[common], help="the preemption history, newest first (GET ledger/)"
    )
    ledger.add_argument("-n", "--namespace", help="only these namespaces (a,b)")
    ledger.add_argument("--podgroup", type=_podgroup, metavar="NAMESPACE/NAME")
    ledger.add_argument("--kind", help="only these kinds (a,b), e.g. plan.created")
    ledger.add_argument("--request", help="only the entries of this request id")
    ledger.add_argument("--limit", type=_limit, default=100, help="at most this many rows (default 100)")
    shells = sub.add_parser("completion", help="print a shell completion script")
    shells.add_argument("shell", choices=("bash", "zsh"))
    return parser


RUNNERS = {
    "plan": run_plan,
    "explain": run_explain,
    "whatif": run_whatif,
    "pending": run_pending,
    "ledger": run_ledger,
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)  # a usage error exits 2 here, as argparse does
    try:
        if args.command == "completion":
            sys.stdout.write(completion(args.shell))
            return OK
        RUNNERS[args.command](Target(args), args)
    except Failure as failure:
        sys.stderr.write(f"{PROG}: error: {failure}\n")
        return failure.code
    except BrokenPipeError:  # `| head`
        return OK
    return OK


if __name__ == "__main__":
    sys.exit(main())
