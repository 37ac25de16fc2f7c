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

from ..served import Served, parse_feature_metrics
from .resources import COMPOSITE_PODGROUPS, PODGROUPS, WORKLOADS, Resource

log = logging.getLogger(__name__)


def _get(
    api_client: client.ApiClient, path: str, timeout: float | tuple[float, float], absent: tuple[int, ...]
) -> bytes | None:
    """The body of ``GET path``; None for an ``absent`` status; ``ApiException`` for any other answer that
    is not a 200."""
    method, url, headers, _, _ = api_client.param_serialize(
        "GET", path, header_params={"Accept": "application/json, text/plain"}, auth_settings=["BearerToken"]
    )
    response = api_client.call_api(method, url, header_params=headers, _request_timeout=timeout)
    body = bytes(response.read())
    if response.status in absent:
        return None
    if response.status != 200:
        raise ApiException(status=response.status, reason=f"GET {path}: {response.reason}")
    return body


def served_plurals(
    api_client: client.ApiClient, api_version: str, timeout: float | tuple[float, float]
) -> set[str]:
    """The resources (plurals, subresources left out) discovery lists under ``/apis/<api_version>``; none
    when the group version is not served (404). Any other refusal raises, so a caller retries rather than
    taking an unreachable server for one without the kinds."""
    body = _get(api_client, f"/apis/{api_version}", timeout, absent=(404,))
    if body is None:
        return set()
    return {r["name"] for r in json.loads(body).get("resources", []) if "/" not in r.get("name", "/")}


def served(
    api_client: client.ApiClient, resources: tuple[Resource, ...], timeout: float | tuple[float, float]
) -> tuple[Resource, ...]:
    """Those of ``resources`` the server serves: one discovery request per API group version."""
    plurals: dict[str, set[str]] = {}
    for resource in resources:
        if resource.api_version not in plurals:
            plurals[resource.api_version] = served_plurals(api_client, resource.api_version, timeout)
    return tuple(r for r in resources if r.plural in plurals[r.api_version])


def discover(api_client: client.ApiClient, timeout: float | tuple[float, float] = (5.0, 15.0)) -> Served:
    """What the API server serves now (``ApiException`` other than a 404 and connection errors propagate:
    the caller decides whether an unanswered discovery is fatal). The feature gates are unknown, never
    guessed, when ``/metrics`` may not be read (401, 403) or is not there."""
    found = served(api_client, (PODGROUPS, WORKLOADS, COMPOSITE_PODGROUPS), timeout)
    metrics = _get(api_client, "/metrics", timeout, absent=(401, 403, 404))
    features = parse_feature_metrics(metrics.decode("utf-8", "replace")) if metrics else {}
    return Served(PODGROUPS in found, WORKLOADS in found, COMPOSITE_PODGROUPS in found, features)
