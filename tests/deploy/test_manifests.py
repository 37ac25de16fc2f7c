"""deploy/ is what an operator applies: every kustomization renders with kubectl's kustomize, every object
passes the 1.37 schema strictly, and the pieces are safe and point at each other (selectors, ports,
commands, volumes, policies)."""

from __future__ import annotations

import pytest
import yaml
from kubernetes_validate import utils as kube_validate

from tests.deploy.rendering import (
    COMPONENTS,
    COMPOSED,
    DEPLOY,
    NAMESPACE,
    OVERLAYS,
    PROCESSES,
    config_data,
    find,
    one,
    pod_spec,
    workloads,
)

ALL = [*OVERLAYS, *COMPOSED]
CERT_MANAGER_KINDS = {"Issuer", "Certificate"}
MONITORING_KINDS = {"PodMonitor", "PrometheusRule"}  # the Prometheus Operator's


def check_cert_manager_shape(obj: dict) -> None:
    """cert-manager's kinds have no schema in kubernetes-validate: their shape, as cert-manager v1 wants it."""
    assert obj["apiVersion"] == "cert-manager.io/v1" and obj["metadata"]["namespace"] == NAMESPACE
    spec = obj["spec"]
    if obj["kind"] == "Issuer":
        assert len(set(spec) & {"selfSigned", "ca", "acme", "vault", "venafi"}) == 1, spec
        if "ca" in spec:
            assert spec["ca"]["secretName"]
        return
    assert set(spec) <= {
        "secretName",
        "commonName",
        "dnsNames",
        "duration",
        "renewBefore",
        "usages",
        "privateKey",
        "issuerRef",
        "isCA",
    }, spec
    assert spec["secretName"] and spec["issuerRef"]["kind"] in ("Issuer", "ClusterIssuer")
    assert spec.get("commonName") or spec.get("dnsNames")
    assert set(spec.get("usages", [])) <= {
        "server auth",
        "client auth",
        "digital signature",
        "key encipherment",
    }


@pytest.mark.parametrize("overlay", ALL)
def test_every_object_passes_the_kubernetes_1_37_schema_strictly(rendered, overlay):
    objects = rendered[overlay]
    assert objects, f"{overlay} rendered nothing"
    for obj in objects:
        if obj["kind"] in CERT_MANAGER_KINDS:
            check_cert_manager_shape(obj)
        elif obj["kind"] in MONITORING_KINDS:
            assert obj["apiVersion"] == "monitoring.coreos.com/v1"  # tests/deploy/test_monitoring.py
        else:
            kube_validate.validate(obj, "1.37.0", strict=True)
        if (
            obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding")
            and "Webhook" not in obj["kind"]
        ):
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["metadata"]


def test_every_component_is_built_by_some_kustomization(tree):
    used = set()
    for kustomization in (tree / "overlays").glob("*/kustomization.yaml"):
        used |= {
            c.rsplit("/", 1)[-1] for c in yaml.safe_load(kustomization.read_text()).get("components", [])
        }
    assert set(COMPONENTS) <= used, f"components no kustomization renders: {sorted(set(COMPONENTS) - used)}"


def test_the_overlays_are_the_ones_docs_install_names():
    install = (DEPLOY.parent / "docs" / "install.md").read_text()
    for name in OVERLAYS:
        assert f"deploy/overlays/{name}" in install, name
    for name in COMPONENTS:
        assert f"components/{name}" in install, name


def effective(container: dict, pod: dict, key: str):
    return container.get("securityContext", {}).get(key, pod.get("securityContext", {}).get(key))


@pytest.mark.parametrize("overlay", ALL)
def test_every_container_is_locked_down_and_sized(rendered, overlay):
    for workload in workloads(rendered[overlay]):
        pod = workload["spec"]["template"]["spec"]
        assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
        assert not any("hostPath" in v for v in pod.get("volumes", []))
        for container in pod.get("initContainers", []) + pod["containers"]:
            where = f"{overlay}: {workload['metadata']['name']}/{container['name']}"
            assert effective(container, pod, "runAsNonRoot") is True, where
            assert effective(container, pod, "runAsUser") not in (None, 0), where
            assert effective(container, pod, "seccompProfile") == {"type": "RuntimeDefault"}, where
            context = container.get("securityContext", {})
            assert context.get("readOnlyRootFilesystem") is True, where
            assert context.get("allowPrivilegeEscalation") is False, where
            assert context.get("privileged") is not True, where
            assert context.get("capabilities") == {"drop": ["ALL"]}, where
            resources = container.get("resources", {})
            for part in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources.get(part, {})), f"{where}: {part}"


@pytest.mark.parametrize("overlay", ALL)
def test_writable_paths_are_empty_dirs(rendered, overlay):
    """A read-only root filesystem: /tmp, and GANGWEB_VAR_DIR for gangweb's processes, are emptyDirs."""
    var_dir = config_data(rendered[overlay])["GANGWEB_VAR_DIR"]
    for process in PROCESSES:
        pod = pod_spec(rendered[overlay], process)
        empty = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
        for container in pod.get("initContainers", []) + pod["containers"]:
            mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
            dirs = [
                e["value"] for e in container.get("env", []) if e["name"].endswith("_DIR") and e.get("value")
            ]
            for path in ("/tmp", var_dir, *dirs):
                assert mounts.get(path) in empty, f"{process}/{container['name']}: {path} is no emptyDir"


def test_the_namespace_enforces_the_restricted_pod_security_standard(rendered):
    labels = one(rendered["cert-manager"], "Namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


@pytest.mark.parametrize("overlay", ALL)
def test_services_and_budgets_select_pods_and_name_their_ports(rendered, overlay):
    objects = rendered[overlay]
    pods = {w["metadata"]["name"]: w["spec"]["template"] for w in workloads(objects)}
    for obj in find(objects, "Service") + find(objects, "PodDisruptionBudget"):
        selector = obj["spec"]["selector"]
        selector = selector.get("matchLabels", selector)
        chosen = [t for t in pods.values() if selector.items() <= t["metadata"]["labels"].items()]
        assert len(chosen) == 1, obj["metadata"]["name"]
        if obj["kind"] == "Service":
            names = {p["name"] for c in chosen[0]["spec"]["containers"] for p in c.get("ports", [])}
            assert {p["targetPort"] for p in obj["spec"]["ports"]} <= names, obj["metadata"]["name"]


def test_the_webhook_survives_node_drains_and_rollouts(rendered):
    objects = rendered["cert-manager"]
    webhook = one(objects, "Deployment", "gangweb-webhook")
    labels = webhook["spec"]["template"]["metadata"]["labels"]
    assert webhook["spec"]["replicas"] >= 2
    assert webhook["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    (term,) = webhook["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= labels.items()
    budget = one(objects, "PodDisruptionBudget", "gangweb-webhook")
    assert budget["spec"]["minAvailable"] == 1 < webhook["spec"]["replicas"]
    (container,) = webhook["spec"]["template"]["spec"]["containers"]
    probe = container["readinessProbe"]["httpGet"]
    assert probe["path"] == "/readyz" and probe["scheme"] == "HTTPS"
    assert probe["port"] in {p["name"] for p in container["ports"]}


def test_two_beats_on_different_nodes_and_they_run_the_migrations_first(rendered):
    """Two beats (only the lock holder sends, gangweb/beat.py): a lost node leaves the other."""
    beat = one(rendered["cert-manager"], "Deployment", "gangweb-beat")
    assert beat["spec"]["replicas"] == 2
    assert beat["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    (term,) = beat["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert one(rendered["cert-manager"], "PodDisruptionBudget", "gangweb-beat")["spec"]["minAvailable"] == 1
    (migrate,) = beat["spec"]["template"]["spec"]["initContainers"]
    assert migrate["command"] == ["gangweb", "migrate", "--noinput"]
    for process in ("worker", "web", "webhook"):
        commands = [c["command"] for c in pod_spec(rendered["cert-manager"], process)["containers"]]
        assert not any("beat" in command or "--beat" in command for command in commands), process


def test_containers_run_commands_that_exist(rendered):
    from django.core.management import get_commands

    commands = get_commands()
    for workload in workloads(rendered["quickstart"]):
        pod = workload["spec"]["template"]["spec"]
        for container in pod.get("initContainers", []) + pod["containers"]:
            argv = container.get("command")
            if workload["metadata"]["name"].removeprefix("gangweb-") not in PROCESSES:
                continue  # PostgreSQL and Redis run their images' own programs
            if argv[0] == "gangweb":  # the package's command: manage.py's commands, settings preset
                assert argv[1] in commands, f"{workload['metadata']['name']} runs unknown command {argv[1]}"
            elif argv[0] == "celery":
                assert argv[1:3] == ["-A", "gangweb"] and argv[3] in ("worker", "beat")
            else:
                assert argv[0] == "uvicorn" and argv[-1] == "gangweb.asgi:application"


@pytest.mark.parametrize("overlay", ALL)
def test_every_pod_runs_as_its_own_service_account(rendered, overlay):
    objects = rendered[overlay]
    accounts = {o["metadata"]["name"]: o for o in find(objects, "ServiceAccount")}
    for process in PROCESSES:
        assert pod_spec(objects, process)["serviceAccountName"] == f"gangweb-{process}"
    assert set(accounts) == {f"gangweb-{p}" for p in PROCESSES}
    # beat never calls the API: no token in its pod at all.
    assert accounts["gangweb-beat"]["automountServiceAccountToken"] is False
    assert pod_spec(objects, "beat")["automountServiceAccountToken"] is False


def test_one_image_for_every_gangweb_process(rendered):
    images = {
        c["image"]
        for process in PROCESSES
        for c in pod_spec(rendered["cert-manager"], process).get("initContainers", [])
        + pod_spec(rendered["cert-manager"], process)["containers"]
    }
    assert len(images) == 1, images


def secret_refs(workload: dict) -> set[tuple[str, str]]:
    pod = workload["spec"]["template"]["spec"]
    return {
        (e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
        for c in pod.get("initContainers", []) + pod["containers"]
        for e in c.get("env", [])
        if "secretKeyRef" in e.get("valueFrom", {})
    }


def test_the_quickstart_secret_holds_every_key_its_pods_read(rendered):
    objects = rendered["quickstart"]
    (secret,) = [s for s in find(objects, "Secret") if s["metadata"]["name"].startswith("gangweb-secrets")]
    wanted = set().union(*(secret_refs(w) for w in workloads(objects)))
    assert {name for name, _ in wanted} == {secret["metadata"]["name"]}
    assert {key for _, key in wanted} <= set(secret["data"])


def test_elsewhere_the_secret_is_the_operators_and_install_md_names_its_keys(rendered):
    install = (DEPLOY.parent / "docs" / "install.md").read_text()
    objects = rendered["enforce"]
    assert not [s for s in find(objects, "Secret") if s["metadata"]["name"] == "gangweb-secrets"]
    for _, key in set().union(*(secret_refs(w) for w in workloads(objects))):
        assert f"--from-literal={key}=" in install, key


def allowed_ingress(objects: list[dict], labels: dict, port: int) -> list[dict]:
    """The ``from`` lists of the NetworkPolicy rules that let traffic to ``port`` of a pod with ``labels``."""
    found = []
    for policy in find(objects, "NetworkPolicy"):
        selector = policy["spec"]["podSelector"]
        if not selector.get("matchLabels", {}).items() <= labels.items() or selector.get("matchExpressions"):
            continue
        for rule in policy["spec"].get("ingress", []):
            if any(p["port"] == port for p in rule.get("ports", [])) or not rule.get("ports"):
                found.append(rule.get("from", []))
    return found


def selected_names(sources: list[dict]) -> set[str]:
    names = set()
    for source in sources:
        for expression in source["podSelector"]["matchExpressions"]:
            assert expression["key"] == "app.kubernetes.io/name" and expression["operator"] == "In"
            names |= set(expression["values"])
    return names


@pytest.mark.parametrize("overlay", ALL)
def test_network_policies_let_in_only_what_must_reach_each_component(rendered, overlay):
    objects = rendered[overlay]
    (deny,) = [p for p in find(objects, "NetworkPolicy") if p["spec"]["podSelector"] == {}]
    assert deny["spec"]["policyTypes"] == ["Ingress"] and not deny["spec"].get("ingress")
    by_name = {w["metadata"]["name"]: w for w in workloads(objects)}
    for name, workload in by_name.items():
        labels = workload["spec"]["template"]["metadata"]["labels"]
        ports = [
            p["containerPort"]
            for c in workload["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])
        ]
        if name == "gangweb-beat":
            assert not ports  # nothing listens, nothing is let in
        if name == "gangweb-worker":
            metrics = int(config_data(objects)["GANGWEB_WORKER_METRICS_PORT"])
            assert ports == [metrics]  # only its /metrics listens
        for port in ports:
            rules = allowed_ingress(objects, labels, port)
            assert rules, f"{overlay}: nothing may reach {name}:{port}"
            if name in ("gangweb-webhook", "gangweb-web", "gangweb-worker"):
                continue  # kube-apiserver (no pod), people, Prometheus: any source, that port only
            # The databases: exactly the gangweb processes whose environment names them.
            wanted = "DATABASE_URL" if name == "gangweb-postgres" else "REDIS_URL"
            readers = {
                n
                for n, w in by_name.items()
                if any(
                    e["name"] == wanted
                    for c in w["spec"]["template"]["spec"].get("initContainers", [])
                    + w["spec"]["template"]["spec"]["containers"]
                    for e in c.get("env", [])
                )
            }
            assert set().union(*(selected_names(r) for r in rules)) == readers, name
        for policy in find(objects, "NetworkPolicy"):
            for rule in policy["spec"].get("ingress", []):
                assert rule.get("ports"), (
                    f"{policy['metadata']['name']}: a rule without ports lets in every port"
                )
