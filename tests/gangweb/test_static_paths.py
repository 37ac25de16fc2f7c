"""Static files through a real ASGI server: a path that leaves the static directories, however it is
spelled, is a 404 with no traceback, in the answer or in the log."""

from __future__ import annotations

import http.client

from tests.gangweb.conftest import EMBEDDED_DEFAULTS

ODD_PATHS = [
    "/static/..%2f..%2fmanage.py",
    "/static/../../manage.py",
    "/static/%2e%2e/%2e%2e/manage.py",
    "/static/..",
    "/static/vendor/../../gangweb/settings.py",
    "/static/..%5c..%5cmanage.py",
    "/static/%00",
    "/static/dashboard/common.js%00.png",
    "/static/%c0%ae%c0%ae/manage.py",
    "/static//etc/passwd",
    "/static/dashboard/",
]


def get(address: str, path: str) -> tuple[int, bytes]:
    """GET ``path`` exactly as written (no client-side normalisation of ``..``)."""
    host, port = address.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_paths_out_of_the_static_directories_are_404s_without_a_traceback(asgi_server, tmp_path):
    address = asgi_server(env=EMBEDDED_DEFAULTS)
    assert get(address, "/static/dashboard/common.js")[0] == 200
    answers = {path: get(address, path) for path in ODD_PATHS}
    assert {path: status for path, (status, _) in answers.items()} == dict.fromkeys(ODD_PATHS, 404)
    assert not [path for path, (_, body) in answers.items() if b"Traceback" in body or b"manage.py" in body]
    log = "".join(p.read_text(errors="replace") for p in tmp_path.glob("uvicorn-*.log"))
    assert "Traceback" not in log and "Exception inside application" not in log
