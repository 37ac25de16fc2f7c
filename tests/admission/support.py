"""Fixture loading and AdmissionReview building shared by the admission tests."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "admission"
POD_FIXTURES = sorted(path.name for path in (FIXTURES / "pods").glob("*.yaml"))
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((FIXTURES / "expected.yaml").read_text())


def load_pod(name: str) -> dict[str, Any]:
    return yaml.safe_load((FIXTURES / "pods" / name).read_text())


def load_owner(name: str) -> dict[str, Any]:
    return yaml.safe_load((FIXTURES / "owners" / name).read_text())


def review(
    obj: dict[str, Any] | None,
    *,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    kind: tuple[str, str, str] = ("", "v1", "Pod"),
    dry_run: bool = False,
    uid: str | None = None,
) -> dict[str, Any]:
    """An AdmissionReview request as kube-apiserver sends it for ``obj``."""
    group, version, kind_name = kind
    source = obj or old or {}
    metadata = source.get("metadata") or {}
    resource = kind_name.lower() + "s"
    request = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind_name},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": kind_name},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": metadata.get("name", ""),
        "namespace": metadata.get("namespace", ""),
        "operation": operation,
        "userInfo": {
            "username": "system:serviceaccount:kube-system:job-controller",
            "groups": ["system:serviceaccounts"],
        },
        "object": copy.deepcopy(obj),
        "oldObject": copy.deepcopy(old),
        "dryRun": dry_run,
        "options": {
            "apiVersion": "meta.k8s.io/v1",
            "kind": "CreateOptions" if operation == "CREATE" else "UpdateOptions",
        },
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def review_bytes(*args: Any, **kwargs: Any) -> bytes:
    return json.dumps(review(*args, **kwargs)).encode()


def priority_classes() -> list[dict[str, Any]]:
    """The PriorityClasses the pod fixtures name, as their admitted pods imply them (value from
    ``spec.priority``, policy from ``spec.preemptionPolicy``): a server's priority admission needs them."""
    classes: dict[str, dict[str, Any]] = {}
    for name in POD_FIXTURES:
        spec = load_pod(name).get("spec") or {}
        if spec.get("priorityClassName"):
            classes[spec["priorityClassName"]] = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": spec["priorityClassName"]},
                "value": spec.get("priority", 0),
                "preemptionPolicy": spec.get("preemptionPolicy", "PreemptLowerPriority"),
            }
    return sorted(classes.values(), key=lambda pc: pc["metadata"]["name"])
