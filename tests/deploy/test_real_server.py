"""deploy/ against a real kube-apiserver (the `real_cluster` of `make cluster`, hack/cluster): every overlay
passes its server-side dry run, and what is safe to create without images (namespace, RBAC, Services,
NetworkPolicies, webhook configurations) is created and read back as the server stored it.

cert-manager's and the Prometheus Operator's kinds are left out of the dry run: the operator installs them
beforehand (docs/install.md) and the test cluster has none of their CRDs."""

from __future__ import annotations

import json

from tests.deploy.conftest import WEBHOOK_CONFIGURATIONS
from tests.deploy.rendering import NAMESPACE, find

NOT_SERVED = {
    "cert-manager.io": {"Certificate", "Issuer", "ClusterIssuer"},
    "monitoring.coreos.com": {"PodMonitor", "ServiceMonitor", "PrometheusRule"},
}


def api_group(obj: dict) -> str:
    return obj["apiVersion"].rpartition("/")[0]


def test_every_overlay_passes_the_real_servers_dry_run(real_cluster, rendered, deployed):
    problems = {}
    for name, objects in sorted(rendered.items()):
        left_out = {o["kind"] for o in objects if api_group(o) in NOT_SERVED}
        assert left_out <= set().union(*NOT_SERVED.values()), (name, left_out)
        served = [o for o in objects if api_group(o) not in NOT_SERVED]
        assert {"Deployment", "Service", "ValidatingWebhookConfiguration"} <= {o["kind"] for o in served}, (
            name
        )
        done = real_cluster.run(
            "apply",
            "--dry-run=server",
            "--validate=strict",
            "-f",
            "-",
            input=json.dumps({"apiVersion": "v1", "kind": "List", "items": served}),
            check=False,
        )
        if done.returncode != 0 or done.stderr.strip():
            problems[name] = done.stderr or done.stdout
        else:
            assert done.stdout.count("(server dry run)") == len(served), done.stdout
    assert not problems, "\n".join(f"{name}: {error}" for name, error in problems.items())


def test_namespace_rbac_services_policies_and_webhooks_are_created_for_real(real_cluster, deployed):
    kinds = {o["kind"] for o in deployed}
    assert {"Namespace", "ServiceAccount", "ClusterRole", "Service", "NetworkPolicy"} <= kinds, kinds
    assert set(WEBHOOK_CONFIGURATIONS) <= kinds, kinds
    for obj in deployed:
        where = ["-n", obj["metadata"]["namespace"]] if obj["metadata"].get("namespace") else []
        stored = json.loads(
            real_cluster.run("get", *where, obj["kind"], obj["metadata"]["name"], "-o", "json").stdout
        )
        assert stored["metadata"]["uid"], obj["metadata"]["name"]
        if obj["kind"] == "Service":
            assert stored["spec"]["clusterIP"], stored  # allocated by the real service IP allocator
        if obj["kind"] in WEBHOOK_CONFIGURATIONS:
            hooks = {h["name"]: h for h in stored["webhooks"]}
            assert set(hooks) == {h["name"] for h in obj["webhooks"]}
            assert all(h["clientConfig"]["caBundle"] for h in hooks.values())
            assert all(h["clientConfig"]["service"]["namespace"] == NAMESPACE for h in hooks.values())
    assert {o["metadata"]["name"] for o in find(deployed, "ServiceAccount")} >= {
        "gangweb-webhook",
        "gangweb-web",
        "gangweb-worker",
    }
