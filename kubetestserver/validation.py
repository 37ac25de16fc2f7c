"""Optional schema validation for the test server: refuse objects a 1.37 API server would refuse.

Uses ``kubernetes-validate`` (a test dependency), imported only when validation is switched on.
"""

from __future__ import annotations

from collections.abc import Callable

from scheduler.kube.resources import CUSTOM_OWNER_RESOURCES, QUEUE_RESOURCES, resource_for_object

from . import errors

KUBERNETES_VERSION = "1.37.0"


def schema_validator(version: str = KUBERNETES_VERSION) -> Callable[[dict], None]:
    import kubernetes_validate.utils

    def validate(obj: dict) -> None:
        if resource_for_object(obj) in (*CUSTOM_OWNER_RESOURCES, *QUEUE_RESOURCES):
            return  # JobSet, RayCluster, Volcano's PodGroup, Kueue...: a real server checks them against their CRDs
        try:
            kubernetes_validate.utils.validate(obj, version, strict=True)
        except Exception as exc:  # ValidationError and friends: the message is what matters
            meta = obj.get("metadata") or {}
            raise errors.invalid(
                f'{obj.get("kind")} "{meta.get("name")}" is invalid: {getattr(exc, "message", exc)}'
            ) from exc

    return validate
