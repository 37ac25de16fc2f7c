"""The webhook configurations deploy/ registers: the code's own (admission/webhookconfig.py, rules from the
gang-source registry), the selectors, failure policies and timeouts docs/install.md documents, a caBundle
that verifies the served certificate, and paths and ports that the real `webhook serve`, started with the
Deployment's own command and settings, answers; with mutual TLS, kube-apiserver's certificate is answered
and nothing else."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from admission import certs
from admission.policy import ALWAYS_SKIPPED
from admission.sources import SOURCES
from admission.webhookconfig import MUTATE_PATH, VALIDATE_PATH, webhook_configurations
from kubetestserver import KubeTestServer
from tests.admission.serving import Server, closed_port
from tests.conftest import ROOT
from tests.deploy.rendering import DEPLOY, NAMESPACE, config_data, find, one, pod_spec

KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def webhooks(objects: list[dict]) -> dict[str, dict]:
    return {w["name"]: w for kind in KINDS for obj in find(objects, kind) for w in obj["webhooks"]}


def test_the_base_registers_exactly_what_the_code_builds():
    """deploy/base/webhookconfigurations.yaml is `webhook config --without-ca-bundle`'s output."""
    documents = [
        d for d in yaml.safe_load_all((DEPLOY / "base" / "webhookconfigurations.yaml").read_text()) if d
    ]
    expected = webhook_configurations(service="gangweb-webhook", namespace=NAMESPACE, ca_pem=None)
    assert documents == expected, (
        "regenerate deploy/base/webhookconfigurations.yaml: python manage.py webhook config --without-ca-bundle"
    )


def test_the_controller_rules_are_the_registrys(rendered):
    """Every controller a gang source reviews is sent to controllers.validate, and nothing else is."""
    rules = webhooks(rendered["enforce"])["controllers.validate.gangweb.io"]["rules"]
    sent = {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]}
    wanted = {(o.group, o.plural) for s in SOURCES if s.controller is not None for o in s.owners}
    assert sent == wanted
    for rule in rules:
        assert rule["operations"] == ["CREATE", "UPDATE"] and rule["scope"] == "Namespaced"


def documented_policies() -> dict[str, tuple[str, int]]:
    """The table of docs/install.md "Failure policies": webhook name -> (failurePolicy, timeoutSeconds)."""
    install = (ROOT / "docs" / "install.md").read_text()
    rows = re.findall(r"^\| `([a-z.]+\.gangweb\.io)` \| `(Ignore|Fail)` \| (\d+) s \|", install, re.M)
    return {name: (policy, int(seconds)) for name, policy, seconds in rows}


@pytest.mark.parametrize("overlay", ["cert-manager", "self-signed", "enforce", "quickstart"])
def test_selectors_failure_policies_and_timeouts_are_the_documented_ones(rendered, overlay):
    objects = rendered[overlay]
    own = config_data(objects)["GANGWEB_NAMESPACE"]
    assert own == NAMESPACE and one(objects, "Namespace", own)
    found = webhooks(objects)
    assert {n: (w["failurePolicy"], w["timeoutSeconds"]) for n, w in found.items()} == documented_policies()
    for name, webhook in found.items():
        (by_name, opt_out) = webhook["namespaceSelector"]["matchExpressions"]
        assert by_name["key"] == "kubernetes.io/metadata.name" and by_name["operator"] == "NotIn"
        assert set(by_name["values"]) == ALWAYS_SKIPPED | {own} and "kube-system" in by_name["values"]
        assert opt_out == {"key": "gangweb.io/admission", "operator": "NotIn", "values": ["disabled"]}
        assert webhook["sideEffects"] == "None" and webhook["timeoutSeconds"] <= 10
        if any("pods" in r["resources"] for r in webhook["rules"]):
            conditions = {c["name"]: c["expression"] for c in webhook["matchConditions"]}
            assert "kubernetes.io/config.mirror" in conditions["not-a-mirror-pod"], name


def test_the_self_signed_ca_bundle_is_the_ca_that_signed_the_serving_certificate(tree, rendered):
    ca = (tree / "overlays" / "self-signed" / "certs" / certs.CA_CERT).read_bytes()
    for webhook in webhooks(rendered["self-signed"]).values():
        assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == ca
    (secret,) = find(rendered["self-signed"], "Secret")
    volume = next(v for v in pod_spec(rendered["self-signed"], "webhook")["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == secret["metadata"]["name"]  # the hashed name, followed


def test_cert_manager_injects_the_ca_of_the_certificate_the_webhook_mounts(rendered):
    objects = rendered["cert-manager"]
    service = one(objects, "Service", "gangweb-webhook")["metadata"]["name"]
    volume = next(v for v in pod_spec(objects, "webhook")["volumes"] if v["name"] == "tls")
    for kind in KINDS:
        (config,) = find(objects, kind)
        source = config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        namespace, name = source.split("/")
        certificate = one(objects, "Certificate", name)
        assert namespace == certificate["metadata"]["namespace"] == NAMESPACE
        assert certificate["spec"]["secretName"] == volume["secret"]["secretName"]
        assert f"{service}.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
        assert "server auth" in certificate["spec"]["usages"]
        assert all("caBundle" not in w["clientConfig"] for w in config["webhooks"])


def test_kube_apiservers_admission_configuration_names_the_webhooks_host(rendered):
    """The kubeconfig's user must be <service>.<namespace>.svc (port 443) for kube-apiserver to pick it."""
    admission = yaml.safe_load((DEPLOY / "admission" / "admission-config.yaml").read_text())
    kubeconfig = yaml.safe_load((DEPLOY / "admission" / "webhook-kubeconfig.yaml").read_text())
    assert (
        admission["apiVersion"] == "apiserver.config.k8s.io/v1"
        and admission["kind"] == "AdmissionConfiguration"
    )
    plugins = {p["name"]: p["configuration"] for p in admission["plugins"]}
    assert set(plugins) == {"ValidatingAdmissionWebhook", "MutatingAdmissionWebhook"}
    for configuration in plugins.values():
        assert configuration["kind"] == "WebhookAdmissionConfiguration"
        assert configuration["kubeConfigFile"].endswith("/webhook-kubeconfig.yaml")
    hosts = set()
    for webhook in webhooks(rendered["self-signed-mtls"]).values():
        service = webhook["clientConfig"]["service"]
        port = "" if service["port"] == 443 else f":{service['port']}"
        hosts.add(f"{service['name']}.{service['namespace']}.svc{port}")
    assert [u["name"] for u in kubeconfig["users"]] == sorted(hosts)
    assert set(kubeconfig["users"][0]["user"]) == {"client-certificate", "client-key"}


def review(pod: dict) -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "deploy-test",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "operation": "CREATE",
                "namespace": "ml-team",
                "name": pod["metadata"]["name"],
                "object": pod,
                "userInfo": {"username": "system:serviceaccount:kube-system:job-controller"},
            },
        }
    ).encode()


GANG_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "train-0", "namespace": "ml-team", "labels": {"gangweb.io/pod-group": "train"}},
    "spec": {"containers": [{"name": "c", "image": "x"}]},
}


@pytest.fixture(scope="module")
def deployed_webhook(tree, rendered, tmp_path_factory):
    """`webhook serve` as the self-signed, mutual-TLS rendering runs it: its container's command (the /tls
    paths on the generated files, a free port for the containerPort), the ConfigMap's settings, the
    kube-apiserver client certificate from `webhook certs --client-cert`; PodGroups from the API test server."""
    tmp_path = tmp_path_factory.mktemp("webhook")
    objects = rendered["self-signed-mtls"]
    (container,) = pod_spec(objects, "webhook")["containers"]
    argv = list(container["command"])
    cert_dir = tree / "overlays" / "self-signed" / "certs"
    port = closed_port()
    listen = argv.index("--port")
    served_port = int(argv[listen + 1])
    argv[listen + 1] = str(port)
    argv = [str(cert_dir / a.removeprefix("/tls/")) if a.startswith("/tls/") else a for a in argv]
    assert argv[0] == "gangweb"  # the package's command, as installed in this venv
    with KubeTestServer() as api:
        env = {
            **os.environ,
            **config_data(objects),
            "GANGWEB_VAR_DIR": str(tmp_path / "var"),
            "SECRET_KEY": "deploy-test-only",
            "REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0",
            "KUBECONFIG": str(api.write_kubeconfig(tmp_path / "kubeconfig")),
        }
        env["GANGWEB_WEBHOOK_CLIENT_CA"] = str(
            cert_dir / env["GANGWEB_WEBHOOK_CLIENT_CA"].removeprefix("/tls/")
        )
        env.pop("DATABASE_URL", None)  # the webhook gets none (deploy/base/webhook.yaml)
        log = (tmp_path / "server.log").open("ab")
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "gangweb"), *argv[1:], "--host", "127.0.0.1"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        log.close()
        client = (cert_dir / certs.CLIENT_CERT, cert_dir / certs.CLIENT_KEY)
        server = Server(cert_dir, port, process, client)
        try:
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
                try:
                    connection = server.connection(client=None)
                    connection.request("GET", "/readyz")
                    if connection.getresponse().status == 200:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, (tmp_path / "server.log").read_text()[-3000:]
                time.sleep(0.2)
            yield server, served_port
        finally:
            process.terminate()
            process.wait(timeout=15)


def test_the_registered_paths_and_ports_are_the_ones_webhook_serve_answers(rendered, deployed_webhook):
    server, served_port = deployed_webhook
    objects = rendered["self-signed-mtls"]
    service = one(objects, "Service", "gangweb-webhook")
    (container,) = pod_spec(objects, "webhook")["containers"]
    container_ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    service_ports = {p["port"]: container_ports[p["targetPort"]] for p in service["spec"]["ports"]}
    paths = set()
    for name, webhook in webhooks(objects).items():
        reference = webhook["clientConfig"]["service"]
        assert (reference["name"], reference["namespace"]) == (service["metadata"]["name"], NAMESPACE)
        assert service_ports[reference["port"]] == served_port, (
            name
        )  # Service port -> the port serve listens on
        paths.add(reference["path"])
    assert paths == {MUTATE_PATH, VALIDATE_PATH}
    for path in sorted(paths):
        status, body = server.post(path, review(GANG_POD))
        assert status == 200 and body["response"]["uid"] == "deploy-test" and body["response"]["allowed"], (
            body
        )
        if path == MUTATE_PATH:
            patch = json.loads(base64.b64decode(body["response"]["patch"]))
            assert patch == [
                {"op": "add", "path": "/spec/schedulingGroup", "value": {"podGroupName": "train"}}
            ]


def test_with_mutual_tls_only_kube_apiservers_certificate_is_answered(deployed_webhook):
    server, _ = deployed_webhook
    for path in (MUTATE_PATH, VALIDATE_PATH):
        status, body = server.post(path, review(GANG_POD), connection=server.connection(client=None))
        assert status == 403, body
