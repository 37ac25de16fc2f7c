"""Security headers from a real server (uvicorn): HSTS only when gangweb itself terminates TLS, and the
Content-Security-Policy on what it answers either way. (Every page under the policy in Chromium:
test_security_headers_browser.py.)"""

from __future__ import annotations

import os
import ssl

import httpx
import pytest

from admission import certs
from gangweb import webserver
from tests.conftest import free_port, wait_for_port
from tests.gangweb.conftest import EMBEDDED_DEFAULTS


@pytest.fixture
def tls_server(tmp_path):
    """uvicorn terminating TLS itself for ``localhost``; yields its base URL
    and a client context that trusts its CA."""
    ca = certs.issue_ca("gangweb test CA", days=1)
    serving = certs.issue_serving(ca, ["localhost"], days=1)
    (tmp_path / "tls.crt").write_bytes(serving.cert_pem())
    (tmp_path / "tls.key").write_bytes(serving.key_pem())
    port = free_port()
    tls = (tmp_path / "tls.key", tmp_path / "tls.crt")
    env = {**os.environ, **EMBEDDED_DEFAULTS, "GANGWEB_VAR_DIR": str(tmp_path)}
    proc = webserver.start(port, env, log=(tmp_path / "uvicorn-tls.log").open("wb"), tls=tls)
    try:
        wait_for_port(port, proc=proc)
        yield f"https://localhost:{port}", ssl.create_default_context(cadata=ca.cert_pem().decode())
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_hsts_is_sent_over_gangweb_s_own_tls_and_never_over_plain_http(tls_server, asgi_server):
    base, context = tls_server
    secure = httpx.get(base + "/login/", verify=context, timeout=30)
    assert secure.status_code == 200
    assert secure.headers["strict-transport-security"] == "max-age=31536000"
    assert "frame-ancestors 'none'" in secure.headers["content-security-policy"]

    # TLS ended before gangweb (an Ingress) or none at all: gangweb cannot know what the browser saw.
    plain = httpx.get(f"http://{asgi_server(env=EMBEDDED_DEFAULTS)}/login/", timeout=30)
    assert plain.status_code == 200
    assert "strict-transport-security" not in plain.headers
    assert "frame-ancestors 'none'" in plain.headers["content-security-policy"]


def test_the_policy_is_on_error_answers_too(asgi_server):
    address = asgi_server(env=EMBEDDED_DEFAULTS)
    for path in ("/no-such-page/", "/api/v1/no-such-path/"):
        answer = httpx.get(f"http://{address}{path}", timeout=30)
        assert answer.status_code == 404
        assert "script-src 'self'" in answer.headers["content-security-policy"], path
