from __future__ import annotations

import json

import pytest

from scheduler.kube.resources import CUSTOM_OWNER_RESOURCES, QUEUE_WATCHED
from tests.deploy.rendering import COMPOSED, OVERLAYS, build, compose, prepare


@pytest.fixture(scope="session")
def tree(tmp_path_factory):
    """deploy/ with the generated certificates and secrets, plus an operator's kustomization that turns on
    mutual TLS over the self-signed overlay and one that adds the monitoring pack to the observe overlay (every
    component is built by some kustomization)."""
    tree = prepare(tmp_path_factory.mktemp("deploy") / "deploy")
    compose(tree, "self-signed-mtls", ["self-signed"], ["enforce", "mtls"])
    compose(tree, "observe-monitoring", ["observe"], ["monitoring"])
    return tree


@pytest.fixture(scope="session")
def rendered(tree) -> dict[str, list[dict]]:
    """Every overlay (and the composed one) as kubectl's kustomize renders it."""
    return {name: build(tree / "overlays" / name) for name in [*OVERLAYS, *COMPOSED]}


# What the real-server tests create for real (the workloads stay a server-side dry run: their images and
# Secrets are an operator's).
REALLY_APPLIED = (
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "NetworkPolicy",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)
WEBHOOK_CONFIGURATIONS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


@pytest.fixture(scope="module")
def deployed(real_cluster, rendered) -> list[dict]:
    """The self-signed overlay's namespace, RBAC, Services, NetworkPolicies and webhook configurations,
    applied to the real cluster. The webhook configurations are deleted again after the module (the
    cluster is the whole session's): no webhook serves them there, and their PodGroup rule fails closed
    (failurePolicy Fail), which would refuse the PodGroups of the tests that follow."""
    objects = [o for o in rendered["self-signed"] if o["kind"] in REALLY_APPLIED]
    ordered = sorted(objects, key=lambda o: REALLY_APPLIED.index(o["kind"]))
    real_cluster.run(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": ordered})
    )
    try:
        yield objects
    finally:
        for obj in objects:
            if obj["kind"] in WEBHOOK_CONFIGURATIONS:
                real_cluster.run(
                    "delete", obj["kind"], obj["metadata"]["name"], "--ignore-not-found", check=False
                )


def stand_in_crd(resource) -> dict:
    """A schema-less CRD for a gang owner's kind: the API the operator installs with that workload controller
    (JobSet, LeaderWorkerSet, Kubeflow, Ray, other schedulers' PodGroups), so that RBAC questions about it
    resolve on a cluster without those controllers."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{resource.plural}.{resource.group}"},
        "spec": {
            "group": resource.group,
            "scope": "Namespaced" if resource.namespaced else "Cluster",
            "names": {"plural": resource.plural, "kind": resource.kind, "listKind": resource.list_kind},
            "versions": [
                {
                    "name": resource.version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="session")
def owner_crds(real_cluster) -> None:
    """The gang owners' and the queue managers' CRDs installed on the real cluster and established (stand-ins:
    tests/realcluster/test_kueue.py applies Kueue's own over them)."""
    kinds = {(r.group, r.plural): r for r in (*CUSTOM_OWNER_RESOURCES, *QUEUE_WATCHED)}
    crds = [stand_in_crd(r) for r in kinds.values()]
    real_cluster.run(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": crds})
    )
    for crd in crds:
        real_cluster.run(
            "wait", "--for=condition=Established", f"crd/{crd['metadata']['name']}", "--timeout=120s"
        )


@pytest.fixture(scope="session")
def release(tmp_path_factory, rendered) -> dict:
    """`make release` (scripts/release.py, without the image) into a directory of the test's own: the wheel,
    the manifest and its objects, SHA256SUMS; ``rendered`` beside them for the tests that compare."""
    import subprocess
    import sys

    import yaml

    from tests.conftest import ROOT

    dist = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "release.py"), "--no-image", "--dist", str(dist)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:] + done.stdout[-2000:]
    (wheel,) = dist.glob("gangweb-*.whl")
    manifest = (dist / "gangweb.yaml").read_text()
    return {
        "dist": dist,
        "wheel": wheel,
        "manifest": manifest,
        "objects": [doc for doc in yaml.safe_load_all(manifest) if doc],
        "sums": (dist / "SHA256SUMS").read_text(),
        "rendered": rendered,
    }
