"""deploy/ is what an operator applies: every object must pass the 1.37 schema in strict mode and
the pieces must point at each other (selectors, ports, commands, permissions)."""

from __future__ import annotations

import pytest
import yaml
from kubernetes_validate import utils as kube_validate

from tests.conftest import ROOT

BASE = ROOT / "deploy" / "base"


def manifest_objects() -> list[tuple[str, dict]]:
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    objects = []
    for name in kustomization["resources"]:
        for doc in yaml.safe_load_all((BASE / name).read_text()):
            if doc:
                objects.append((name, doc))
    return objects


OBJECTS = manifest_objects()
IDS = [f"{name}:{obj['kind']}/{obj['metadata']['name']}" for name, obj in OBJECTS]


def by_kind(kind: str) -> list[dict]:
    return [obj for _, obj in OBJECTS if obj["kind"] == kind]


@pytest.mark.parametrize("name, obj", OBJECTS, ids=IDS)
def test_each_object_passes_the_kubernetes_1_37_schema_strictly(name, obj):
    kube_validate.validate(obj, "1.37.0", strict=True)


def test_every_service_and_pdb_selects_a_deployment():
    pod_labels = [d["spec"]["template"]["metadata"]["labels"] for d in by_kind("Deployment")]
    for obj in by_kind("Service") + by_kind("PodDisruptionBudget"):
        selector = obj["spec"]["selector"]
        selector = selector.get("matchLabels", selector)
        assert any(selector.items() <= labels.items() for labels in pod_labels), obj["metadata"]["name"]


def test_service_target_ports_name_container_ports():
    deployments = {
        d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"]: d
        for d in by_kind("Deployment")
    }
    for service in by_kind("Service"):
        deployment = deployments[service["spec"]["selector"]["app.kubernetes.io/name"]]
        port_names = {
            p["name"]
            for c in deployment["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])
        }
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in port_names


def test_the_webhook_survives_a_node_drain():
    webhook = next(d for d in by_kind("Deployment") if d["metadata"]["name"] == "gangweb-webhook")
    assert webhook["spec"]["replicas"] >= 2
    assert by_kind("PodDisruptionBudget")


def test_containers_run_commands_that_exist():
    from django.core.management import get_commands

    commands = get_commands()
    for deployment in by_kind("Deployment"):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            argv = container["command"]
            if argv[:2] == ["python", "manage.py"]:
                assert argv[2] in commands, f"{deployment['metadata']['name']} runs unknown command {argv[2]}"
            elif argv[0] == "celery":
                assert argv[1:3] == ["-A", "gangweb"]
            else:
                assert argv[0] == "daphne" and argv[-1] == "gangweb.asgi:application"


def test_rbac_grants_the_write_paths_the_engine_uses():
    rules = by_kind("ClusterRole")[0]["rules"]

    def allowed(group: str, resource: str, verb: str) -> bool:
        return any(
            group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules
        )

    assert allowed("", "pods/eviction", "create")
    assert allowed("", "pods/status", "patch")
    assert allowed("", "events", "create")
    assert allowed("scheduling.k8s.io", "podgroups", "create")
    assert allowed("scheduling.k8s.io", "podgroups/status", "patch")
    for resource in ("pods", "nodes"):
        assert allowed("", resource, "watch")
