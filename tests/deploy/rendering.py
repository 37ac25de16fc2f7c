"""deploy/ as an operator renders it: a copy of the tree with the files the docs say to make first (the
self-signed certificates from ``manage.py webhook certs``, the quickstart's ``secrets.env`` from its script),
built by the kustomize of hack/cluster's kubectl (the version of the real API server the tests apply it to)."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import CLUSTER_SCRIPT, ROOT

DEPLOY = ROOT / "deploy"
OVERLAYS = sorted(p.parent.name for p in (DEPLOY / "overlays").glob("*/kustomization.yaml"))
COMPONENTS = sorted(p.parent.name for p in (DEPLOY / "components").glob("*/kustomization.yaml"))
# The operator's own kustomizations tests/deploy/conftest.py composes from overlays and components.
COMPOSED = ("self-signed-mtls", "observe-monitoring")
NAMESPACE = "gangweb-system"
PROCESSES = ("webhook", "web", "worker", "beat")  # app.kubernetes.io/name: gangweb-<process>


@functools.cache
def kubectl() -> str:
    """hack/cluster's kubectl: the real API server's own version, built (once, then cached) when missing."""
    done = subprocess.run([sys.executable, str(CLUSTER_SCRIPT), "build"], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"hack/cluster/cluster.py build failed, so there is no kubectl:\n{done.stderr[-4000:]}")
    return str(Path(done.stdout.strip().splitlines()[-1]) / "kubectl")


def prepare(target: Path) -> Path:
    """A copy of deploy/ at ``target`` with the certificates and secrets an operator generates first."""
    shutil.copytree(DEPLOY, target)
    certs = target / "overlays" / "self-signed" / "certs"
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "webhook", "certs", "--dir", str(certs)]
        + ["--client-cert", "kube-apiserver"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [str(target / "overlays" / "quickstart" / "make-secrets.sh")], check=True, capture_output=True
    )
    return target


def build(directory: Path) -> list[dict]:
    done = subprocess.run([kubectl(), "kustomize", str(directory)], capture_output=True, text=True)
    assert done.returncode == 0, f"kubectl kustomize {directory}: {done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def compose(tree: Path, name: str, resources: list[str], components: list[str]) -> Path:
    """A kustomization of the operator's own (beside the overlays of ``tree``) combining overlays and
    components, as docs/install.md shows."""
    directory = tree / "overlays" / name
    directory.mkdir()
    (directory / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [f"../{r}" for r in resources],
                "components": [f"../../components/{c}" for c in components],
            }
        )
    )
    return directory


def find(objects: list[dict], kind: str, name: str | None = None) -> list[dict]:
    return [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objects: list[dict], kind: str, name: str) -> dict:
    (obj,) = find(objects, kind, name)
    return obj


def workloads(objects: list[dict]) -> list[dict]:
    return [o for o in objects if o["kind"] in ("Deployment", "StatefulSet")]


def pod_spec(objects: list[dict], process: str) -> dict:
    return one(objects, "Deployment", f"gangweb-{process}")["spec"]["template"]["spec"]


def config_data(objects: list[dict]) -> dict[str, str]:
    return one(objects, "ConfigMap", "gangweb")["data"]


def rules_of(objects: list[dict], service_account: str) -> list[dict]:
    """The rules of every ClusterRole and Role bound to ``service_account`` of gangweb's namespace."""
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objects if o["kind"] in ("ClusterRole", "Role")}
    rules = []
    for binding in objects:
        if binding["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if any(
            s["kind"] == "ServiceAccount" and s["name"] == service_account and s.get("namespace") == NAMESPACE
            for s in binding["subjects"]
        ):
            rules += roles[(binding["roleRef"]["kind"], binding["roleRef"]["name"])]["rules"]
    return rules


def granted(rules: list[dict]) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) triples the rules grant; no wildcards allowed in gangweb's roles."""
    triples = set()
    for rule in rules:
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                for verb in rule.get("verbs", []):
                    assert "*" not in (group, resource, verb), f"wildcard in {rule}"
                    triples.add((group, resource, verb))
    return triples


def base_objects() -> list[dict]:
    """deploy/base rendered (no generated files needed): what the repository's own tests of rules read."""
    return build(DEPLOY / "base")
