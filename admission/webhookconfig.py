"""The MutatingWebhookConfiguration and ValidatingWebhookConfiguration that register gangweb.

Each choice is explained in docs/admission.md ("Webhook configuration"); in short: pods are mutated on
CREATE only, failing open (a webhook outage must not stop pod creation cluster-wide); pod consistency
checks also fail open, while PodGroup/Workload checks fail closed (rare writes, and a malformed group
is worse than a retried write); system namespaces, gangweb's own namespace, opted-out namespaces and
pods, and mirror pods never reach the webhook (selectors and CEL matchConditions, evaluated by the
apiserver, so they cost no round trip).
"""

from __future__ import annotations

import base64
from typing import Any

from admission import labels as L
from admission.policy import ALWAYS_SKIPPED
from admission.sources import SOURCES

MUTATE_PATH = "/admission/mutate"
VALIDATE_PATH = "/admission/validate"
NOT_MIRROR_POD = {
    "name": "not-a-mirror-pod",
    "expression": "!has(object.metadata.annotations) || "
    f"!('{L.MIRROR_POD_ANNOTATION}' in object.metadata.annotations)",
}


def _namespace_selector(own_namespace: str) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {
                "key": L.NAMESPACE_NAME_LABEL,
                "operator": "NotIn",
                "values": sorted(ALWAYS_SKIPPED | {own_namespace}),
            },
            {"key": L.ADMISSION_LABEL, "operator": "NotIn", "values": [L.ADMISSION_DISABLED]},
        ]
    }


def _object_selector() -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"key": L.ADMISSION_LABEL, "operator": "NotIn", "values": [L.ADMISSION_DISABLED]}
        ]
    }


def _client(service: str, namespace: str, path: str, port: int, ca_pem: bytes | None) -> dict[str, Any]:
    client: dict[str, Any] = {
        "service": {"name": service, "namespace": namespace, "path": path, "port": port}
    }
    if (
        ca_pem is not None
    ):  # None: injected later (cert-manager's CA injector, or deploy/'s kustomize replacement)
        client["caBundle"] = base64.b64encode(ca_pem).decode("ascii")
    return client


def _rule(
    groups: list[str], versions: list[str], resources: list[str], operations: list[str]
) -> dict[str, Any]:
    return {
        "apiGroups": groups,
        "apiVersions": versions,
        "resources": resources,
        "operations": operations,
        "scope": "Namespaced",
    }


def controller_rules() -> list[dict[str, Any]]:
    """The rules of ``controllers.validate``: every controller a gang source reviews (``admission.sources``),
    one rule per API group and versions, in source order."""
    plurals: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for source in SOURCES:
        if source.controller is not None:
            for resource in source.owners:
                plurals.setdefault((resource.group, source.controller.versions), []).append(resource.plural)
    return [
        _rule([group], list(versions), resources, ["CREATE", "UPDATE"])
        for (group, versions), resources in plurals.items()
    ]


def webhook_configurations(
    *,
    service: str,
    namespace: str,
    ca_pem: bytes | None,
    port: int = 443,
    name: str = "gangweb",
    mutate_timeout: int = 3,
    validate_timeout: int = 5,
) -> list[dict[str, Any]]:
    """Both configuration objects, ready for ``kubectl apply`` (``ca_pem=None``: without ``caBundle``, for
    ``deploy/base``, where the certificate overlay injects it)."""
    common = {
        "admissionReviewVersions": ["v1"],
        # Pure functions of the request: nothing is written anywhere, dry run or not.
        "sideEffects": "None",
        "matchPolicy": "Equivalent",
        "namespaceSelector": _namespace_selector(namespace),
        "objectSelector": _object_selector(),
    }
    labels = {"app.kubernetes.io/name": "gangweb", "app.kubernetes.io/component": "webhook"}
    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name, "labels": labels},
        "webhooks": [
            {
                "name": "pods.mutate.gangweb.io",
                "clientConfig": _client(service, namespace, MUTATE_PATH, port, ca_pem),
                "rules": [_rule([""], ["v1"], ["pods"], ["CREATE"])],
                "failurePolicy": "Ignore",
                "timeoutSeconds": mutate_timeout,
                # Other webhooks may add the labels gangweb reads (e.g. Kueue's); the mutation is idempotent.
                "reinvocationPolicy": "IfNeeded",
                "matchConditions": [
                    NOT_MIRROR_POD,
                    {
                        "name": "no-group-yet",
                        "expression": "!has(object.spec.schedulingGroup) || !has(object.spec.schedulingGroup.podGroupName)",
                    },
                ],
                **common,
            }
        ],
    }
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name, "labels": labels},
        "webhooks": [
            {
                "name": "pods.validate.gangweb.io",
                "clientConfig": _client(service, namespace, VALIDATE_PATH, port, ca_pem),
                "rules": [_rule([""], ["v1"], ["pods"], ["CREATE", "UPDATE"])],
                "failurePolicy": "Ignore",
                "timeoutSeconds": validate_timeout,
                "matchConditions": [NOT_MIRROR_POD],
                **common,
            },
            {
                "name": "podgroups.validate.gangweb.io",
                "clientConfig": _client(service, namespace, VALIDATE_PATH, port, ca_pem),
                "rules": [
                    _rule(["scheduling.k8s.io"], ["*"], ["podgroups", "workloads"], ["CREATE", "UPDATE"])
                ],
                "failurePolicy": "Fail",
                "timeoutSeconds": validate_timeout,
                **common,
            },
            {
                "name": "controllers.validate.gangweb.io",
                "clientConfig": _client(service, namespace, VALIDATE_PATH, port, ca_pem),
                "rules": controller_rules(),
                "failurePolicy": "Ignore",
                "timeoutSeconds": validate_timeout,
                **common,
            },
        ],
    }
    return [mutating, validating]
