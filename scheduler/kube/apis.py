"""Reading resources through the official client as raw JSON (unknown fields kept, no model parsing).

Typed list functions are called with ``_preload_content=False``: the request is the client's own
(paths, query, auth), only the answer is left as JSON, which is faster than building models and
keeps fields the 37.x models do not know.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubernetes import client

from .resources import (
    COMPOSITE_PODGROUPS,
    DEVICE_CLASSES,
    EVENTS_V1,
    NODES,
    PDBS,
    PODGROUPS,
    PODS,
    PRIORITY_CLASSES,
    RESOURCE_CLAIM_TEMPLATES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    ROLE_BINDINGS,
    WORKLOADS,
    Resource,
)

# resource -> (API class, list function for all namespaces / cluster scope, namespaced list function)
_LISTERS: dict[Resource, tuple[type, str, str | None]] = {
    NODES: (client.CoreV1Api, "list_node", None),
    PODS: (client.CoreV1Api, "list_pod_for_all_namespaces", "list_namespaced_pod"),
    PODGROUPS: (
        client.SchedulingV1beta1Api,
        "list_pod_group_for_all_namespaces",
        "list_namespaced_pod_group",
    ),
    WORKLOADS: (client.SchedulingV1beta1Api, "list_workload_for_all_namespaces", "list_namespaced_workload"),
    COMPOSITE_PODGROUPS: (
        client.SchedulingV1alpha3Api,
        "list_composite_pod_group_for_all_namespaces",
        "list_namespaced_composite_pod_group",
    ),
    PDBS: (
        client.PolicyV1Api,
        "list_pod_disruption_budget_for_all_namespaces",
        "list_namespaced_pod_disruption_budget",
    ),
    PRIORITY_CLASSES: (client.SchedulingV1Api, "list_priority_class", None),
    EVENTS_V1: (client.EventsV1Api, "list_event_for_all_namespaces", "list_namespaced_event"),
    RESOURCE_CLAIMS: (
        client.ResourceV1Api,
        "list_resource_claim_for_all_namespaces",
        "list_namespaced_resource_claim",
    ),
    ROLE_BINDINGS: (
        client.RbacAuthorizationV1Api,
        "list_role_binding_for_all_namespaces",
        "list_namespaced_role_binding",
    ),
    RESOURCE_CLAIM_TEMPLATES: (
        client.ResourceV1Api,
        "list_resource_claim_template_for_all_namespaces",
        "list_namespaced_resource_claim_template",
    ),
    RESOURCE_SLICES: (client.ResourceV1Api, "list_resource_slice", None),
    DEVICE_CLASSES: (client.ResourceV1Api, "list_device_class", None),
}

LIST_PAGE_SIZE = 500


def list_function(
    api_client: client.ApiClient, resource: Resource, namespace: str | None = None
) -> Callable[..., Any]:
    """The client's list (and watch) function of ``resource``; a custom resource's is the custom objects
    API's, with the same query parameters."""
    if resource not in _LISTERS:
        custom = client.CustomObjectsApi(api_client)
        g, v, plural = resource.group, resource.version, resource.plural
        if namespace and resource.namespaced:
            return lambda **kw: custom.list_namespaced_custom_object(g, v, namespace, plural, **kw)
        return lambda **kw: custom.list_cluster_custom_object(g, v, plural, **kw)
    api_class, all_name, namespaced_name = _LISTERS[resource]
    api = api_class(api_client)
    if namespace and namespaced_name:
        fn = getattr(api, namespaced_name)
        return lambda **kw: fn(namespace, **kw)
    return getattr(api, all_name)


def stamp(resource: Resource, obj: dict) -> dict:
    """List items and watch objects may lack apiVersion/kind; snapshots need them."""
    obj["apiVersion"] = resource.api_version
    obj["kind"] = resource.kind
    return obj


def read_json(response: Any) -> Any:
    """Body of a ``_preload_content=False`` answer; reading it all keeps the pooled connection usable."""
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()


def discard(response: Any) -> None:
    try:
        _ = response.data  # reading it drains the body, so the connection can be reused
    finally:
        response.release_conn()


def list_raw(
    api_client: client.ApiClient,
    resource: Resource,
    *,
    namespace: str | None = None,
    timeout: float | tuple[float, float] = 30.0,
    field_selector: str | None = None,
) -> tuple[list[dict], str]:
    """Every object of ``resource`` (paged; of ``field_selector`` only), stamped with apiVersion/kind, and the
    list resourceVersion."""
    fn = list_function(api_client, resource, namespace)
    items: list[dict] = []
    token: str | None = None
    resource_version = ""
    while True:
        kwargs: dict[str, Any] = {
            "limit": LIST_PAGE_SIZE,
            "_preload_content": False,
            "_request_timeout": timeout,
        }
        if token:
            kwargs["_continue"] = token
        if field_selector:
            kwargs["field_selector"] = field_selector
        page = read_json(fn(**kwargs))
        meta = page.get("metadata") or {}
        resource_version = resource_version or meta.get("resourceVersion", "")
        items.extend(stamp(resource, obj) for obj in page.get("items") or [])
        token = meta.get("continue")
        if not token:
            return items, resource_version
