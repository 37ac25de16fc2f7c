"""Who the webhook believes: kube-apiserver proven by its client certificate (``--client-ca``), and the
API server's own PodGroups (a watch), never the content of earlier reviews. Real ``webhook serve``
processes over real TLS; a local Kubernetes API test server stands in for the cluster."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from admission import certs
from kubetestserver import KubeTestServer, write_kubeconfig
from scheduler.kube.resources import PODGROUPS
from tests.admission.serving import NAMESPACE, ROOT, SERVICE, closed_port, start_server, stop_server
from tests.admission.support import load_pod, review_bytes

PODGROUP_KIND = ("scheduling.k8s.io", "v1beta1", "PodGroup")


def write_pair(directory: Path, name: str, pair: certs.KeyPair) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    cert.write_bytes(pair.cert_pem())
    key.write_bytes(pair.key_pem())
    return cert, key


def podgroup(name: str, namespace: str = "ml-team", **spec) -> dict:
    spec.setdefault("schedulingPolicy", {"gang": {"minCount": 4}})
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def gang_pod(group: str, priority_class: str | None = None) -> dict:
    pod = load_pod("job-parallel.yaml")
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    if priority_class is not None:
        pod["spec"]["priorityClassName"] = priority_class
    return pod


# --- kube-apiserver proven by mutual TLS ------------------------------------------------------------


@pytest.fixture(scope="module")
def mtls(tmp_path_factory):
    directory = tmp_path_factory.mktemp("mtls")
    issued = certs.ensure_certificates(directory, SERVICE, NAMESPACE)
    apiserver, _ = certs.ensure_client_certificate(directory, issued.ca, "kube-apiserver")
    pairs = {
        "apiserver": (directory / certs.CLIENT_CERT, directory / certs.CLIENT_KEY),
        # Signed by the right CA, but not for kube-apiserver.
        "other-name": write_pair(directory, "other", certs.issue_client(issued.ca, "someone-else", 30)),
        # kube-apiserver's name, signed by a CA of the caller's own.
        "rogue-ca": write_pair(
            directory, "rogue", certs.issue_client(certs.issue_ca("rogue", 30), "kube-apiserver", 30)
        ),
        # The webhook's own serving pair (its key is in the webhook's Secret): serverAuth only, no client.
        "serving": (directory / certs.TLS_CERT, directory / certs.TLS_KEY),
    }
    assert certs.common_name(apiserver.cert) == "kube-apiserver"
    handle = start_server(
        directory,
        "--client-ca",
        str(directory / certs.CA_CERT),
        "--client-name",
        "kube-apiserver",
        workers=1,
        client=pairs["apiserver"],
    )
    yield handle, pairs
    stop_server(handle)


def test_kube_apiserver_with_its_client_certificate_is_answered(mtls):
    server, _pairs = mtls
    status, body = server.post("/admission/mutate", review_bytes(load_pod("job-parallel.yaml"), uid="mtls-1"))
    assert status == 200 and body["response"]["uid"] == "mtls-1" and "patch" in body["response"]
    status, body = server.post("/admission/validate", review_bytes(gang_pod("llama")))
    assert status == 200 and body["response"]["allowed"] is True


@pytest.mark.parametrize("path", ["/admission/mutate", "/admission/validate"])
@pytest.mark.parametrize("who", ["no certificate", "other-name"])
def test_callers_without_kube_apiservers_certificate_get_403(mtls, path, who):
    server, pairs = mtls
    connection = server.connection(client=None if who == "no certificate" else pairs[who])
    status, body = server.post(path, review_bytes(load_pod("job-parallel.yaml")), connection)
    assert status == 403 and body["code"] == 403
    assert "client certificate" in body["message"]


@pytest.mark.parametrize("who", ["rogue-ca", "serving"])
def test_a_certificate_that_does_not_verify_as_a_client_does_not_even_connect(mtls, who):
    server, pairs = mtls
    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        # TLS 1.3: the server's refusal may only surface at the first read.
        server.post(
            "/admission/validate", review_bytes(gang_pod("llama")), server.connection(client=pairs[who])
        )


def test_probes_and_metrics_need_no_client_certificate(mtls):
    server, _ = mtls
    for path in ("/healthz", "/readyz", "/metrics"):
        connection = server.connection(client=None)
        connection.request("GET", path)
        assert connection.getresponse().status == 200, path


# --- PodGroups from the API, not from reviews -------------------------------------------------------


@pytest.fixture(scope="module")
def api():
    with KubeTestServer(bookmark_interval=0.5) as kube:
        kube.store.create(PODGROUPS, podgroup("resnet-train", priorityClassName="batch-high"), "ml-team")
        yield kube


@pytest.fixture(scope="module")
def watching(api, tmp_path_factory):
    directory = tmp_path_factory.mktemp("watching")
    certs.ensure_certificates(directory, SERVICE, NAMESPACE)
    kubeconfig = api.write_kubeconfig(directory / "kubeconfig")
    handle = start_server(
        directory, env={"KUBECONFIG": str(kubeconfig), "GANGWEB_CLUSTER": "kube"}, ready_path="/readyz"
    )
    yield handle
    stop_server(handle)


def allowed(server, pod: dict, **kwargs) -> bool:
    status, body = server.post("/admission/validate", review_bytes(pod, **kwargs))
    assert status == 200
    return body["response"]["allowed"]


def eventually(predicate, timeout: float = 30.0) -> bool:
    """For what a watch delivers: generous bounds, no timing asserted."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_pods_are_compared_with_the_podgroup_the_api_holds(watching):
    # Two workers, each with its own watch: ask several times to reach both.
    for n in range(6):
        assert allowed(watching, gang_pod("resnet-train", "batch-low"), uid=f"low-{n}") is False
        assert allowed(watching, gang_pod("resnet-train", "batch-high"), uid=f"high-{n}") is True


def test_a_forged_podgroup_review_denies_no_real_pod(watching):
    forged = podgroup("llama-ft", priorityClassName="evil", priority=1)
    for n in range(4):
        status, _body = watching.post(
            "/admission/validate", review_bytes(forged, kind=PODGROUP_KIND, uid=f"forged-{n}")
        )
        assert status == 200
    for n in range(6):
        assert allowed(watching, gang_pod("llama-ft", "batch-high"), uid=f"real-{n}") is True


def test_podgroup_changes_in_the_api_reach_every_worker(api, watching):
    api.store.create(PODGROUPS, podgroup("bert", priorityClassName="batch-low"), "ml-team")
    assert eventually(lambda: not any(allowed(watching, gang_pod("bert", "batch-high")) for _ in range(6)))
    api.store.delete(PODGROUPS, "ml-team", "bert")
    assert eventually(lambda: all(allowed(watching, gang_pod("bert", "batch-high")) for _ in range(6)))


def test_not_ready_until_the_podgroups_are_listed(tmp_path):
    certs.ensure_certificates(tmp_path, SERVICE, NAMESPACE)
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig", f"http://127.0.0.1:{closed_port()}"
    )  # nothing listens
    handle = start_server(tmp_path, workers=1, env={"KUBECONFIG": str(kubeconfig), "GANGWEB_CLUSTER": "kube"})
    try:
        connection = handle.connection()
        connection.request("GET", "/readyz")
        response = connection.getresponse()
        assert response.status == 503 and "PodGroups" in json.loads(response.read())["reason"]
        # Liveness and answers do not wait for the API: a pod is then compared with no PodGroup.
        assert allowed(handle, gang_pod("resnet-train", "batch-low")) is True
    finally:
        stop_server(handle)


def test_without_a_cluster_the_server_is_ready_at_once(tmp_path):
    certs.ensure_certificates(tmp_path, SERVICE, NAMESPACE)
    handle = start_server(
        tmp_path, workers=1, ready_path="/readyz", env={"KUBECONFIG": "", "GANGWEB_CLUSTER": "simulated"}
    )
    stop_server(handle)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--client-ca", "not-a-ca.crt"], "holds no PEM certificate"),
        (["--client-ca", "missing.crt"], "cannot read it"),
        (["--client-name", "kube-apiserver"], "--client-name needs --client-ca"),
        (["--read-timeout", "0"], "--read-timeout must be more than 0"),
    ],
)
def test_bad_serve_options_are_one_line_errors(tmp_path, args, message):
    certs.ensure_certificates(tmp_path, SERVICE, NAMESPACE)
    (tmp_path / "not-a-ca.crt").write_text("hello")
    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "webhook", "serve", "--dir", str(tmp_path), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GANGWEB_DEMO": "0", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
