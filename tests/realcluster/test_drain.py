"""`kubectl drain` of a KWOK node whose pods a PodDisruptionBudget protects, against the real control plane:
the budget refuses the second eviction while the first pod's replacement has nowhere to run; once a second
node joins and the replacement is Ready there (the disruption controller recounts it), drain retries and
finishes with both pods on the other node. The API test server cannot do this: it never recounts a budget
(docs/kube.md)."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

from tests.realcluster.test_control_plane import WAIT, apply

KWOK_ANNOTATION = "kwok.x-k8s.io/node"


def kwok_node(name: str, label: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION: "fake"},
            "labels": {"type": "kwok", "kubernetes.io/hostname": name, "gangweb.io/drain-test": label},
        },
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        },
    }


def deployment(namespace: str, label: str) -> dict:
    labels = {"app": "served"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "served", "namespace": namespace},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"gangweb.io/drain-test": label},
                    "tolerations": [{"key": KWOK_ANNOTATION, "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
                    ],
                },
            },
        },
    }


def pods(real_cluster, namespace: str) -> list[dict]:
    return json.loads(
        real_cluster.run("get", "-n", namespace, "pods", "-l", "app=served", "-o", "json").stdout
    )["items"]


def test_drain_waits_for_the_budget_and_moves_every_pod(real_cluster, namespace):
    label = uuid.uuid4().hex[:8]
    first, second = f"drain-{label}-a", f"drain-{label}-b"
    try:
        apply(real_cluster, kwok_node(first, label))
        real_cluster.run("wait", f"node/{first}", "--for=condition=Ready", f"--timeout={WAIT}")
        apply(
            real_cluster,
            deployment(namespace, label),
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "served", "namespace": namespace},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "served"}}},
            },
        )
        real_cluster.run(
            "rollout", "status", "-n", namespace, "deployment/served", f"--timeout={WAIT}"
        )  # both pods Ready, on the only node the selector allows
        assert {p["spec"]["nodeName"] for p in pods(real_cluster, namespace)} == {first}
        real_cluster.run(
            "wait",
            "-n",
            namespace,
            "pdb/served",
            "--for=jsonpath={.status.disruptionsAllowed}=1",
            f"--timeout={WAIT}",
        )
        drain = subprocess.Popen(
            [real_cluster.kubectl, f"--kubeconfig={real_cluster.kubeconfig}", "drain", first]
            + ["--ignore-daemonsets", "--delete-emptydir-data", f"--timeout={WAIT}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            # One pod evicted; its replacement waits with no node to go to, so the budget holds the other.
            deadline = time.monotonic() + 120
            while not any(p["status"].get("phase") == "Pending" for p in pods(real_cluster, namespace)):
                assert time.monotonic() < deadline and drain.poll() is None, "no replacement waited"
                time.sleep(0.5)
            apply(real_cluster, kwok_node(second, label))
            said, _ = drain.communicate(timeout=240)
        finally:
            if drain.poll() is None:
                drain.kill()
        assert drain.returncode == 0 and f"node/{first} drained" in said, said
        # the second eviction was refused by the budget, retried, and then admitted
        assert "disruption budget" in said, said
        real_cluster.run("rollout", "status", "-n", namespace, "deployment/served", f"--timeout={WAIT}")
        moved = pods(real_cluster, namespace)
        assert len(moved) == 2 and {p["spec"]["nodeName"] for p in moved} == {second}, moved
        node = json.loads(real_cluster.run("get", "node", first, "-o", "json").stdout)
        assert node["spec"]["unschedulable"] is True
    finally:
        real_cluster.run("delete", "node", first, second, "--ignore-not-found", "--wait=false", check=False)
