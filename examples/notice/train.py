"""A training loop that honours gangweb's preemption notice: a small example of the protocol, stdlib only.

It "trains" (a counter and a sleep stand in for the steps), saves a checkpoint every CHECKPOINT_EVERY
seconds (0: only when told), and looks at its PodGroup between steps. When gangweb gives notice (the
annotation gangweb.io/preemption-deadline appears, beside the DisruptionTarget condition), it saves at once
and writes the time of that checkpoint to the PodGroup's gangweb.io/last-checkpoint annotation: gangweb then
evicts the gang without waiting for the deadline, and the work since that checkpoint is all that is lost.

Environment:
  PODGROUP           the PodGroup to watch and annotate (required)
  POD_NAMESPACE      its namespace (the manifest sets it from the downward API)
  CHECKPOINT_DIR     where checkpoints are written (default /tmp/checkpoints)
  CHECKPOINT_EVERY   seconds between regular checkpoints; 0: on notice only (default 600)
  STEP_SECONDS       one training step (default 1)
  KUBERNETES_API     the API server (default: in-cluster, https://kubernetes.default.svc)
  TOKEN_FILE, CA_FILE  the ServiceAccount's token and CA (default: the in-cluster paths)
Only one member of the gang (index 0, or the only pod) needs to run the watch; the others train.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

SA = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DEADLINE = "gangweb.io/preemption-deadline"
CHECKPOINT = "gangweb.io/last-checkpoint"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PodGroupClient:
    """GET and merge-PATCH one PodGroup with the pod's ServiceAccount token."""

    def __init__(self, namespace: str, name: str):
        self.url = (
            os.environ.get("KUBERNETES_API", "https://kubernetes.default.svc").rstrip("/")
            + f"/apis/scheduling.k8s.io/v1beta1/namespaces/{namespace}/podgroups/{name}"
        )
        self.token = Path(os.environ.get("TOKEN_FILE", SA / "token")).read_text().strip()
        ca = Path(os.environ.get("CA_FILE", SA / "ca.crt"))
        self.context = ssl.create_default_context(cafile=str(ca)) if ca.exists() else None

    def _call(self, method: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            self.url, method=method, data=json.dumps(body).encode() if body else None
        )
        request.add_header("Authorization", f"Bearer {self.token}")
        if body is not None:
            request.add_header("Content-Type", "application/merge-patch+json")
        with urllib.request.urlopen(request, timeout=10, context=self.context) as answer:
            return json.load(answer)

    def annotations(self) -> dict[str, str]:
        return (self._call("GET").get("metadata") or {}).get("annotations") or {}

    def annotate(self, key: str, value: str) -> None:
        self._call("PATCH", {"metadata": {"annotations": {key: value}}})


def save(directory: Path, step: int) -> str:
    """Write the model (here: the step counter) atomically; the checkpoint's time."""
    directory.mkdir(parents=True, exist_ok=True)
    part = directory / "checkpoint.json.part"
    part.write_text(json.dumps({"step": step, "at": now()}))
    part.replace(directory / "checkpoint.json")
    return now()


def main() -> int:
    group = PodGroupClient(os.environ.get("POD_NAMESPACE", "default"), os.environ["PODGROUP"])
    directory = Path(os.environ.get("CHECKPOINT_DIR", "/tmp/checkpoints"))
    every = float(os.environ.get("CHECKPOINT_EVERY", "600"))
    step_seconds = float(os.environ.get("STEP_SECONDS", "1"))
    saved = directory / "checkpoint.json"
    step = json.loads(saved.read_text())["step"] if saved.exists() else 0  # resume after a preemption
    print(f"training from step {step}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # evicted: the work since the checkpoint is lost
    last_save = time.monotonic()
    answered = None  # the deadline whose notice was answered with a checkpoint
    while True:
        time.sleep(step_seconds)
        step += 1
        try:
            deadline = group.annotations().get(DEADLINE)
        except OSError as exc:  # the API server is away for a moment: keep training
            print(f"cannot read the PodGroup: {exc}", flush=True)
            deadline = None
        if deadline and deadline != answered:
            at = save(directory, step)
            group.annotate(CHECKPOINT, at)
            answered, last_save = deadline, time.monotonic()
            print(f"notice until {deadline}: saved step {step} at {at}", flush=True)
        elif every and time.monotonic() - last_save >= every:
            at = save(directory, step)
            group.annotate(CHECKPOINT, at)
            last_save = time.monotonic()
            print(f"saved step {step} at {at}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
