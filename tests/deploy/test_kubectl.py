"""A real client: kubectl against the Kubernetes API test server. The snapshot command of README (`kubectl
get <the snapshot contract's kinds> -A -o yaml`) writes a file that `gang plan` reads and plans exactly as
from the server's own objects.

`kubectl apply --dry-run=server -k deploy/...` and real applies run against a real kube-apiserver instead
(test_real_server.py): the test server serves what gangweb reads and writes, not every kind deploy/ holds."""

from __future__ import annotations

import io
import json
import re
import shlex
import subprocess

import pytest
import yaml
from django.core.management import call_command

from kubetestserver import KubeTestServer
from tests.conftest import ROOT
from tests.deploy.rendering import kubectl

FIXTURE = ROOT / "tests" / "fixtures" / "engine" / "two-racks.yaml"
SNAPSHOT_KINDS = {
    "Node",
    "Pod",
    "PodGroup",
    "CompositePodGroup",
    "Workload",
    "PodDisruptionBudget",
    "PriorityClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "DeviceClass",
}


def readme_snapshot_command() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    (command,) = re.findall(r"`(kubectl get [^`]+ -A -o yaml)`", readme)
    return shlex.split(command)


def plan(snapshot, podgroup: str, policy: str) -> dict:
    out = io.StringIO()
    call_command(
        "gang", "plan", "--snapshot", str(snapshot), "--podgroup", podgroup, "--policy", policy, stdout=out
    )
    return json.loads(out.getvalue())


@pytest.fixture
def server():
    with KubeTestServer() as srv:
        srv.load_file(FIXTURE)
        yield srv


def test_kubectls_snapshot_plans_exactly_as_the_servers_own_objects(server, tmp_path):
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    argv = readme_snapshot_command()
    done = subprocess.run(
        [kubectl(), *argv[1:], "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    from_kubectl = tmp_path / "snapshot.yaml"
    from_kubectl.write_text(done.stdout)
    # The fixture also holds a ConfigMap (kube-root-ca.crt), which the test server now serves and the README's
    # command leaves out.
    own = [o for o in server.store.dump() if o["kind"] in SNAPSHOT_KINDS]
    from_server = tmp_path / "server.yaml"
    from_server.write_text(yaml.safe_dump_all(own))
    listed = yaml.safe_load(done.stdout)
    assert listed["kind"] == "List" and len(listed["items"]) == len(own)
    groups = [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in own if o["kind"] == "PodGroup"]
    assert len(groups) >= 4
    outcomes = set()
    for group in groups:
        for policy in ("gangweb", "kep5710"):
            ours = plan(from_kubectl, group, policy)
            assert ours == plan(from_server, group, policy), (group, policy)
            outcomes.add(ours["outcome"])
    assert "preempt" in outcomes  # a plan with victims, not only groups that already fit
