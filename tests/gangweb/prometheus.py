"""Test tooling: an exporter serving dcgm-exporter's exposition format, and a real Prometheus scraping it.

``DcgmExporter`` serves ``/metrics`` as NVIDIA's dcgm-exporter does (one series per GPU and metric, its
labels ``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname`` and, for a GPU in use,
``container``, ``namespace``, ``pod`` or the DRA ones); the test sets each GPU's series. ``Prometheus``
runs Debian's ``prometheus`` binary on a free port with a one-second scrape interval.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from tests.conftest import free_port, wait_for_port

PROFILING, UTILISATION = "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"
HELP = {
    PROFILING: "Ratio of time the graphics engine is active.",
    UTILISATION: "GPU utilization (in %).",
}


def gpu_labels(host: str, index: int, **extra: str) -> dict[str, str]:
    """dcgm-exporter's labels of one GPU (``extra``: container, namespace, pod, dra_* when in use)."""
    return {
        "gpu": str(index),
        "UUID": f"GPU-{host}-{index:04d}",
        "pci_bus_id": f"00000000:{index + 16:02X}:00.0",
        "device": f"nvidia{index}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "Hostname": host,
        "DCGM_FI_DRIVER_VERSION": "570.124.06",
        **extra,
    }


class DcgmExporter:
    def __init__(self) -> None:
        self.series: list[tuple[str, dict[str, str], float]] = []
        self._lock = threading.Lock()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = exporter.exposition().encode()
                self.send_response(200 if self.path.startswith("/metrics") else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set(self, series: list[tuple[str, dict[str, str], float]]) -> None:
        with self._lock:
            self.series = list(series)

    def exposition(self) -> str:
        with self._lock:
            series = list(self.series)
        lines = []
        for metric in (PROFILING, UTILISATION):
            mine = [(labels, value) for name, labels, value in series if name == metric]
            if not mine:
                continue
            lines += [f"# HELP {metric} {HELP[metric]}", f"# TYPE {metric} gauge"]
            for labels, value in mine:
                text = ",".join(f'{k}="{v}"' for k, v in labels.items())
                lines.append(f"{metric}{{{text}}} {value}")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Prometheus:
    def __init__(self, directory: Path, target_port: int) -> None:
        self.directory, self.port = directory, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (directory / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: dcgm\n    honor_labels: true\n"
            f"    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
        )
        self.proc: subprocess.Popen | None = None

    def start(self) -> Prometheus:
        binary = shutil.which("prometheus")
        if binary is None:
            raise RuntimeError("prometheus is not installed (scripts/test.sh installs Debian's package)")
        self.log = open(self.directory / "prometheus.log", "w")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [
                binary,
                f"--config.file={self.directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        wait_for_port(self.port, 60, self.proc)
        return self

    def wait_for(self, query: str, count: int, timeout: float = 60.0) -> None:
        """Until ``query`` answers ``count`` series (the scrapes of the test's series are in)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                answer = httpx.get(f"{self.url}/api/v1/query", params={"query": query}, timeout=5).json()
                if len(answer["data"]["result"]) == count:
                    return
            except (httpx.HTTPError, KeyError, ValueError):
                pass
            time.sleep(0.2)
        raise TimeoutError(f"Prometheus did not answer {count} series for {query} in {timeout}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:
            self.log.close()
        self.proc = None
