"""A real Chromium on the decision view of an observed gang: kube-scheduler's own figures, read from a real
kube-scheduler's /metrics (hack/cluster's binary, serving HTTPS on loopback with a certificate of the test's
CA), beside the plans; and what the panel says once that kube-scheduler stops answering."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import pytest

from admission.certs import issue_ca, issue_serving
from scheduler.nativemetrics import Scrape
from tests.conftest import ROOT, free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FAST = {"GANGWEB_SIM_TICK_SECONDS": "0.25", "GANGWEB_DETECT_INTERVAL_SECONDS": "1", "GANGWEB_MODE": "observe"}
WAIT = 120


def json_of(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def until(check, what: str, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.5)
    raise AssertionError(f"not within {timeout}s: {what}")


@pytest.fixture
def kube_scheduler(tmp_path):
    """hack/cluster's kube-scheduler serving /metrics on loopback; its API server is nowhere (it serves its
    metrics all the same, and preempts nothing). Yields (metrics URL, CA file, process)."""
    bins = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "cluster" / "cluster.py"), "bin"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    binary = f"{bins}/kube-scheduler"
    ca = issue_ca("test-ca", days=1)
    serving = issue_serving(ca, ["localhost"], days=1, ips=("127.0.0.1",))
    for name, data in (
        ("ca.crt", ca.cert_pem()),
        ("tls.crt", serving.cert_pem()),
        ("tls.key", serving.key_pem()),
    ):
        (tmp_path / name).write_bytes(data)
    (tmp_path / "kubeconfig").write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{free_port()}"}}],
                "users": [{"name": "u", "user": {"token": "none"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    port = free_port()
    proc = subprocess.Popen(
        [binary, f"--kubeconfig={tmp_path / 'kubeconfig'}", "--leader-elect=false"]
        + [f"--secure-port={port}", "--bind-address=127.0.0.1"]
        + [f"--tls-cert-file={tmp_path / 'tls.crt'}", f"--tls-private-key-file={tmp_path / 'tls.key'}"]
        + ["--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"],
        stdout=(tmp_path / "kube-scheduler.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"https://127.0.0.1:{port}/metrics"
    try:
        until(
            lambda: Scrape(url, cafile=str(tmp_path / "ca.crt")).read().state == "ok",
            "kube-scheduler's /metrics",
        )
        yield url, str(tmp_path / "ca.crt"), proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_observed_gangs_decision_shows_kube_schedulers_own_figures(
    start_demo, browser_page, kube_scheduler
):
    url, ca, scheduler = kube_scheduler
    demo = start_demo(env={**FAST, "GANGWEB_SCHEDULER_METRICS_URL": url, "GANGWEB_SCHEDULER_METRICS_CA": ca})
    request = until(
        lambda: (json_of(demo.base_url + "/api/v1/requests/?state=observed&limit=1")["results"] or [None])[0],
        "an observed request in the demo",
    )
    native = json_of(demo.base_url + f"/api/v1/requests/{request['id']}/")["decision"]["native"]
    assert native["state"] == "ok", native
    page = browser_page
    page.goto(demo.base_url + f"/requests/{request['id']}/")  # the demo's anonymous reader sees everything
    page.wait_for_selector("#native dt", timeout=30_000)
    figures = dict(
        zip(page.locator("#native dt").all_inner_texts(), page.locator("#native dd").all_inner_texts())
    )
    # This kube-scheduler reaches no API server: it has preempted nothing, and says so.
    assert figures["pod group preemption attempts"] == "none", figures
    assert figures["preemptions that chose victims"] == "0" and figures["victims chosen"] == "0", figures
    assert figures["evaluation, mean"] == "none yet", figures
    assert page.locator("#native dd time").count() == 1, figures  # when it was read, as every page says times
    assert page.locator("#native-missing").is_hidden()
    assert not page.errors, page.errors

    scheduler.terminate()
    scheduler.wait(timeout=30)
    # Read at most every 10 s per process: the page says what happened once a read finds it gone.
    until(
        lambda: (
            json_of(demo.base_url + f"/api/v1/requests/{request['id']}/")["decision"]["native"]["state"]
            == "unavailable"
        ),
        "the decision saying kube-scheduler no longer answers",
        timeout=60,
    )
    page.reload()
    page.wait_for_selector("#native-missing:not([hidden])", timeout=30_000)
    assert "did not answer" in page.inner_text("#native-missing")
    assert page.locator("#native dt").count() == 0
    assert not page.errors, page.errors
