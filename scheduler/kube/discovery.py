"""Reading ``scheduler.served.Served`` from an API server: its discovery documents and its feature gates.

Discovery (``/apis/<group>/<version>``) says which resources are served; the API server's own
``kubernetes_feature_enabled`` metric says which gates are on, for what discovery cannot show (a Job's
``.spec.scheduling`` is in the schema whether or not ``WorkloadWithJob`` is on). The metric needs
``get`` on the non-resource URL ``/metrics``; without it the gates are unknown, never guessed.
"""

from __future__ import annotations

import json
import logging

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ..served import COMPOSITE_API, PODGROUPS_API, Served, parse_feature_metrics
from .resources import COMPOSITE_PODGROUPS, PODGROUPS, WORKLOADS, Resource

log = logging.getLogger(__name__)


def _get(api_client: client.ApiClient, path: str, timeout: float | tuple[float, float]) -> bytes | None:
    """The body of ``GET path``; None for 404 (not served) and 401/403 (not ours to read); ``ApiException``
    for any other answer that is not a 200."""
    method, url, headers, _, _ = api_client.param_serialize(
        "GET", path, header_params={"Accept": "application/json, text/plain"}, auth_settings=["BearerToken"]
    )
    response = api_client.call_api(method, url, header_params=headers, _request_timeout=timeout)
    body = bytes(response.read())
    if response.status in (401, 403, 404):
        return None
    if response.status != 200:
        raise ApiException(status=response.status, reason=f"GET {path}: {response.reason}")
    return body


def served_plurals(
    api_client: client.ApiClient, api_version: str, timeout: float | tuple[float, float]
) -> set[str]:
    """The resources (plurals, subresources left out) discovery lists under ``/apis/<api_version>``."""
    body = _get(api_client, f"/apis/{api_version}", timeout)
    if body is None:
        return set()
    return {r["name"] for r in json.loads(body).get("resources", []) if "/" not in r.get("name", "/")}


def discover(api_client: client.ApiClient, timeout: float | tuple[float, float] = (5.0, 15.0)) -> Served:
    """What the API server serves now (``ApiException`` other than 401/403/404 and connection errors
    propagate: the caller decides whether an unanswered discovery is fatal)."""
    plurals = {
        PODGROUPS_API: served_plurals(api_client, PODGROUPS_API, timeout),
        COMPOSITE_API: served_plurals(api_client, COMPOSITE_API, timeout),
    }

    def has(resource: Resource) -> bool:
        return resource.plural in plurals.get(resource.api_version, set())

    metrics = _get(api_client, "/metrics", timeout)
    features = parse_feature_metrics(metrics.decode("utf-8", "replace")) if metrics else {}
    return Served(has(PODGROUPS), has(WORKLOADS), has(COMPOSITE_PODGROUPS), features)
