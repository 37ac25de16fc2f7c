"""`make release` (scripts/release.py): the wheel and one manifest for `kubectl apply -f`, versioned, the same
bytes on a second run, and strictly valid on Kubernetes 1.37's own API server (the `real_cluster`)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

from tests.conftest import ROOT
from tests.deploy.rendering import NAMESPACE, PROCESSES, find, pod_spec
from tests.deploy.test_real_server import NOT_SERVED, api_group

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_it_writes_the_wheel_and_one_versioned_manifest(release):
    assert release["wheel"].name == f"gangweb-{VERSION}-py3-none-any.whl"
    assert release["manifest"].startswith(f"# gangweb {VERSION}: kubectl apply -f gangweb.yaml")
    objects = release["objects"]
    assert {"Namespace", "Deployment", "Service", "ValidatingWebhookConfiguration", "Certificate"} <= {
        o["kind"] for o in objects
    }
    assert not find(objects, "Secret")  # gangweb-secrets is the operator's (docs/install.md)
    for process in PROCESSES:
        spec = pod_spec(objects, process)
        images = {c["image"] for c in spec.get("initContainers", []) + spec["containers"]}
        assert images == {f"ghcr.io/gangweb/gangweb:{VERSION}"}, (process, images)
    assert all(o["metadata"]["labels"]["app.kubernetes.io/version"] == VERSION for o in objects)
    assert {line.split()[1] for line in release["sums"].splitlines()} == {
        release["wheel"].name,
        "gangweb.yaml",
    }


def test_a_second_release_is_the_same_bytes(release, tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "release.py"), "--no-image", "--dist", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "SHA256SUMS").read_text() == release["sums"]


def test_the_manifest_is_strictly_valid_on_kubernetes_1_37(real_cluster, release, deployed):
    """Every object but cert-manager's (its CRDs are the operator's prerequisite, not on the test cluster)
    through the real API server's strict server-side dry run, in the namespace the manifest creates."""
    served = [o for o in release["objects"] if api_group(o) not in NOT_SERVED]
    left_out = {o["kind"] for o in release["objects"]} - {o["kind"] for o in served}
    assert left_out == {"Certificate", "Issuer"}, left_out
    assert {o["metadata"].get("namespace") for o in served} <= {None, NAMESPACE}
    done = real_cluster.run(
        "apply",
        "--dry-run=server",
        "--validate=strict",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": served}),
        check=False,
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr or done.stdout
    assert done.stdout.count("(server dry run)") == len(served), done.stdout
