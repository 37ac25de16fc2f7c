"""gangweb's webhook beside the real control plane: the files kube-apiserver needs to present its client
certificate (deploy/admission/, paths made local), the production server (`webhook serve`) on loopback, and
deploy/'s webhook configurations pointed at it.

kube-apiserver here has no Service proxy and no cluster network (docs/kube.md), so a webhook Service cannot
route to a process on this machine: the configurations keep everything deploy/ renders but their clientConfig,
which becomes the url form ``https://127.0.0.1:<port>/admission/...`` with the test CA as caBundle. Everything
else (rules, failure policies, selectors, match conditions) is deploy/'s.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

from admission import certs
from tests.conftest import ROOT

ADMISSION = ROOT / "deploy" / "admission"
CLIENT_NAME = "kube-apiserver"  # the name the webhook accepts (--client-name) and the client pair carries
WEBHOOK_HOST = "127.0.0.1"


def admission_files(directory: Path, port: int) -> Path:
    """deploy/admission's AdmissionConfiguration and webhook kubeconfig for a webhook at 127.0.0.1:``port``,
    with the webhook's CA, serving pair and kube-apiserver's client pair in ``directory/certs``; returns the
    AdmissionConfiguration file (``cluster.py up --admission-config``)."""
    pki = directory / "certs"
    made = certs.ensure_certificates(pki, "gangweb-webhook", "gangweb-system", days=30)
    certs.ensure_client_certificate(pki, made.ca, CLIENT_NAME, days=30)
    # The url form is verified against the URL's host: the serving pair names 127.0.0.1, signed by the same CA.
    serving = certs.issue_serving(made.ca, ["localhost"], days=30, ips=(WEBHOOK_HOST,))
    (pki / certs.TLS_KEY).write_bytes(serving.key_pem())
    (pki / certs.TLS_CERT).write_bytes(serving.cert_pem())
    kubeconfig = yaml.safe_load((ADMISSION / "webhook-kubeconfig.yaml").read_text())
    [user] = kubeconfig["users"]
    # kube-apiserver picks the user named after the webhook's host: with the url form, host:port.
    user["name"] = f"{WEBHOOK_HOST}:{port}"
    user["user"] = {
        "client-certificate": str(pki / certs.CLIENT_CERT),
        "client-key": str(pki / certs.CLIENT_KEY),
    }
    (directory / "webhook-kubeconfig.yaml").write_text(yaml.safe_dump(kubeconfig))
    config = yaml.safe_load((ADMISSION / "admission-config.yaml").read_text())
    for plugin in config["plugins"]:
        plugin["configuration"]["kubeConfigFile"] = str(directory / "webhook-kubeconfig.yaml")
    path = directory / "admission-config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def webhook_configurations(rendered: list[dict], port: int, ca_file: Path) -> list[dict]:
    """deploy/'s webhook configurations with each clientConfig pointed at the webhook on loopback."""
    bundle = base64.b64encode(ca_file.read_bytes()).decode()
    out = []
    for obj in rendered:
        if obj["kind"] not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            continue
        obj = copy.deepcopy(obj)
        for hook in obj["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://{WEBHOOK_HOST}:{port}{path}", "caBundle": bundle}
        out.append(obj)
    return out


class WebhookServer:
    """`manage.py webhook serve` with mutual TLS, its own process group, log in ``log``."""

    def __init__(self, pki: Path, port: int, env: dict[str, str], log: Path):
        self.pki, self.port, self.env, self.log_path = pki, port, env, log
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> WebhookServer:
        self.log = open(self.log_path, "ab")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "webhook", "serve", "--dir", str(self.pki)]
            + ["--host", WEBHOOK_HOST, "--port", str(self.port), "--workers", "1", "--log-level", "info"]
            + ["--client-ca", str(self.pki / certs.CA_CERT), "--client-name", CLIENT_NAME],
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        context = ssl.create_default_context(cafile=str(self.pki / certs.CA_CERT))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"webhook serve exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                url = f"https://{WEBHOOK_HOST}:{self.port}/readyz"
                with urllib.request.urlopen(url, context=context, timeout=5) as answer:
                    if answer.status == 200:  # PodGroups listed from the real API
                        return self
            except OSError:
                pass
            time.sleep(0.3)
        raise AssertionError(f"webhook serve not ready within {timeout:.0f} s:\n{self.tail()}")

    def answered(self) -> dict[tuple[str, str], float]:
        """``gangweb_admission_requests_total`` from ``/metrics``: (webhook, decision) -> requests answered."""
        context = ssl.create_default_context(cafile=str(self.pki / certs.CA_CERT))
        url = f"https://{WEBHOOK_HOST}:{self.port}/metrics"
        with urllib.request.urlopen(url, context=context, timeout=10) as answer:
            text = answer.read().decode()
        counts = {}
        for line in text.splitlines():
            if line.startswith("gangweb_admission_requests_total{"):
                labels, _, value = line.partition("} ")
                pairs = dict(part.split("=", 1) for part in labels.split("{", 1)[1].split(","))
                counts[(pairs["webhook"].strip('"'), pairs["decision"].strip('"'))] = float(value)
        return counts

    def tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=10)
        self.log.close()


def as_list(*objects: dict) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
