"""The few writes gangweb makes, through the official client, shaped as kube-scheduler makes them."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ..cluster import ClusterError, ClusterEvent, EvictionResult
from .apis import discard, read_json
from .resources import resource_for_object, resource_named

Timeout = tuple[float, float]

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def status_message(exc: ApiException) -> str:
    """The ``message`` of the Status body the server answered, or the HTTP reason."""
    try:
        body = json.loads(exc.body or "{}")
        if isinstance(body, dict) and body.get("message"):
            return str(body["message"])
    except (TypeError, ValueError):
        pass
    return str(exc.reason or "")


TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, OSError, socket.timeout)


def evict(
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    *,
    dry_run: bool,
    timeout: Timeout,
    uid: str | None = None,
) -> EvictionResult:
    """POST pods/{name}/eviction (policy/v1), with ``preconditions.uid`` when given. API answers become the
    result; transport failures become 503 (no answer) or 504 (timed out), both retryable: a retried
    eviction of a pod that is already gone answers 404, which counts as done."""
    body = client.V1Eviction(
        api_version="policy/v1",
        kind="Eviction",
        metadata=client.V1ObjectMeta(name=name, namespace=namespace),
        delete_options=_delete_options(uid, dry_run),
    )
    return _answer(
        namespace,
        name,
        dry_run,
        lambda: client.CoreV1Api(api_client).create_namespaced_pod_eviction(
            name,
            namespace,
            body,
            dry_run="All" if dry_run else None,
            _request_timeout=timeout,
            _preload_content=False,
        ),
    )


def delete_pod(
    api_client: client.ApiClient, namespace: str, name: str, *, uid: str, dry_run: bool, timeout: Timeout
) -> EvictionResult:
    """DELETE the pod with ``preconditions.uid`` (kube-scheduler's way of removing a victim: no budget)."""
    return _answer(
        namespace,
        name,
        dry_run,
        lambda: client.CoreV1Api(api_client).delete_namespaced_pod(
            name,
            namespace,
            body=_delete_options(uid, dry_run),
            dry_run="All" if dry_run else None,
            _request_timeout=timeout,
            _preload_content=False,
        ),
    )


def _delete_options(uid: str | None, dry_run: bool) -> client.V1DeleteOptions | None:
    if not uid and not dry_run:
        return None
    return client.V1DeleteOptions(
        dry_run=["All"] if dry_run else None, preconditions=client.V1Preconditions(uid=uid) if uid else None
    )


def _answer(namespace: str, name: str, dry_run: bool, call) -> EvictionResult:
    try:
        response = call()
        code = response.status
        discard(response)
        return EvictionResult(namespace, name, code, "", dry_run)
    except ApiException as exc:
        return EvictionResult(namespace, name, int(exc.status or 500), status_message(exc), dry_run)
    except (TimeoutError, urllib3.exceptions.TimeoutError) as exc:
        return EvictionResult(namespace, name, 504, f"no answer in time: {exc}", dry_run)
    except TRANSPORT_ERRORS as exc:
        return EvictionResult(namespace, name, 503, f"API server unreachable: {exc}", dry_run)


def raise_cluster_error(what: str, exc: Exception) -> NoReturn:
    if isinstance(exc, ApiException):
        raise ClusterError(f"{what}: {exc.status} {status_message(exc)}", code=int(exc.status or 0)) from exc
    raise ClusterError(f"{what}: {type(exc).__name__}: {exc}", code=0) from exc


T = TypeVar("T")


def call(what: str, request: Callable[[], T], *, absent: int | None = None) -> T | None:
    """The answer to ``request()``; None when the server answers ``absent`` (404: gone; 409: already
    there). Any other refusal, and a server that does not answer, raise ``ClusterError`` naming ``what``."""
    try:
        return request()
    except ApiException as exc:
        if absent is not None and exc.status == absent:
            return None
        raise_cluster_error(what, exc)
    except TRANSPORT_ERRORS as exc:
        raise_cluster_error(what, exc)


def mark_disruption_target(
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    message: str,
    *,
    timeout: Timeout,
    reason: str = PREEMPTION_BY_SCHEDULER,
    uid: str | None = None,
) -> None:
    """Strategic-merge the ``DisruptionTarget=True`` condition into the pod status (conditions merge by
    type). A pod already gone needs no mark. With ``uid`` the patch names the pod's UID, which the API server
    holds immutable: a pod recreated under the name answers 422 and is not marked."""
    patch: dict[str, Any] = {
        "status": {
            "conditions": [
                {
                    "type": DISRUPTION_TARGET,
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": now_rfc3339(),
                }
            ]
        }
    }
    if uid:
        patch["metadata"] = {"uid": uid}
    response = call(
        f"marking pod {namespace}/{name} as disruption target",
        lambda: client.CoreV1Api(api_client).patch_namespaced_pod_status(
            name, namespace, patch, _request_timeout=timeout, _preload_content=False
        ),
        absent=404,
    )
    if response is not None:
        discard(response)


def _reference(kind: str, namespace: str | None, name: str, uid: str | None = None) -> dict[str, Any]:
    resource = resource_for_object({"kind": kind})
    ref: dict[str, Any] = {"kind": kind, "name": name}
    if resource is not None:
        ref["apiVersion"] = resource.api_version
    if namespace:
        ref["namespace"] = namespace
    if uid:
        ref["uid"] = uid
    return ref


def record_event(
    api_client: client.ApiClient,
    event: ClusterEvent,
    *,
    controller: str,
    instance: str,
    timeout: Timeout,
    involved_uid: str | None = None,
    related_uid: str | None = None,
) -> dict:
    """Create an ``events.k8s.io/v1`` Event, as kube-scheduler's recorder does (``regarding`` the victim,
    ``related`` the preemptor). ``event.extra`` may set ``action`` and other Event fields."""
    extra = dict(event.extra)
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{event.involved_name}.{uuid.uuid4().hex[:16]}", "namespace": event.namespace},
        "eventTime": now_micro(),
        "reportingController": controller,
        "reportingInstance": instance,
        "action": extra.pop("action", "Preempting" if event.reason == "Preempted" else event.reason),
        "reason": event.reason,
        "note": event.message[:1024],
        "type": event.type,
        "regarding": _reference(
            event.involved_kind, event.namespace, event.involved_name, extra.pop("involved_uid", involved_uid)
        ),
    }
    if event.related_kind and event.related_name:
        body["related"] = _reference(
            event.related_kind,
            event.related_namespace or event.namespace,
            event.related_name,
            extra.pop("related_uid", related_uid),
        )
    body.update(extra)
    response = call(
        f"recording event {event.reason} on {event.namespace}/{event.involved_name}",
        lambda: client.EventsV1Api(api_client).create_namespaced_event(
            event.namespace, body, _request_timeout=timeout, _preload_content=False
        ),
    )
    return read_json(response)


def update_event_series(
    api_client: client.ApiClient, namespace: str, name: str, count: int, *, timeout: Timeout
) -> None:
    """Set an Event's ``series`` (its count and last observation now), as client-go's recorder does when
    the same event happens again: one object counts the repeats instead of one object per repeat."""
    body = {"series": {"count": count, "lastObservedTime": now_micro()}}
    response = call(
        f"updating the series of event {namespace}/{name}",
        lambda: client.EventsV1Api(api_client).patch_namespaced_event(
            name, namespace, body, _request_timeout=timeout, _preload_content=False
        ),
    )
    discard(response)


def set_podgroup_condition(
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    condition: dict[str, str],
    *,
    timeout: Timeout,
    attempts: int = 3,
) -> bool:
    """Upsert one PodGroup status condition. ``lastTransitionTime`` moves only when the status changes,
    so the current condition is read first and the patch carries its resourceVersion (409 -> read again).
    Returns False when the PodGroup is gone."""
    api = client.SchedulingV1beta1Api(api_client)
    what = f"setting condition {condition['type']} on PodGroup {namespace}/{name}"
    for attempt in range(attempts):
        response = call(
            what,
            lambda: api.read_namespaced_pod_group_status(
                name, namespace, _request_timeout=timeout, _preload_content=False
            ),
            absent=404,
        )
        if response is None:
            return False
        current = read_json(response)
        conditions = (current.get("status") or {}).get("conditions") or []
        old = next((c for c in conditions if c.get("type") == condition["type"]), None)
        new = dict(condition)
        new["lastTransitionTime"] = (
            old["lastTransitionTime"]
            if old and old.get("status") == new["status"] and old.get("lastTransitionTime")
            else now_rfc3339()
        )
        new.setdefault("observedGeneration", (current.get("metadata") or {}).get("generation", 0))
        if old and all(old.get(k) == v for k, v in new.items()):
            return True
        patch = {
            "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
            "status": {"conditions": [new]},
        }
        try:
            discard(
                api.patch_namespaced_pod_group_status(
                    name, namespace, patch, _request_timeout=timeout, _preload_content=False
                )
            )
            return True
        except ApiException as exc:
            if exc.status == 404:
                return False
            if exc.status == 409 and attempt + 1 < attempts:
                continue
            raise_cluster_error(what, exc)
        except TRANSPORT_ERRORS as exc:
            raise_cluster_error(what, exc)
    return False


def _custom_api(api_client: client.ApiClient, api_version: str, kind: str):
    resource = resource_named(api_version, kind)
    if not resource.group:
        raise ClusterError(f"{api_version} {kind}: core objects have typed calls of their own", code=400)
    return client.CustomObjectsApi(api_client), resource


def _custom_call(
    api: Any, resource: Any, verb: str, namespace: str | None, *args: Any, timeout: Timeout
) -> Any:
    """``CustomObjectsApi``'s ``verb`` (create, get, patch) on ``resource``, namespaced or cluster-scoped as it is."""
    if resource.namespaced:
        method = getattr(api, f"{verb}_namespaced_custom_object")
        scope: tuple[str, ...] = (namespace or "default",)
    else:
        method = getattr(api, f"{verb}_cluster_custom_object")
        scope = ()
    return method(
        resource.group,
        resource.version,
        *scope,
        resource.plural,
        *args,
        _request_timeout=timeout,
        _preload_content=False,
    )


def create_object(api_client: client.ApiClient, obj: dict[str, Any], *, timeout: Timeout) -> bool:
    """POST ``obj`` to its collection (any API group: typed by its apiVersion/kind). True: created; False:
    an object of that name already exists (409 AlreadyExists), which callers that ensure objects treat as
    done. Anything else raises ClusterError."""
    meta = obj.get("metadata") or {}
    api, resource = _custom_api(api_client, str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    what = f"creating {resource.kind} {meta.get('namespace', '')}/{meta.get('name', '')}"
    namespace = meta.get("namespace")
    response = call(
        what, lambda: _custom_call(api, resource, "create", namespace, obj, timeout=timeout), absent=409
    )
    if response is None:
        return False
    discard(response)
    return True


def annotate(
    api_client: client.ApiClient,
    api_version: str,
    kind: str,
    namespace: str,
    name: str,
    annotations: dict[str, str | None],
    *,
    timeout: Timeout,
) -> bool:
    """Merge-patch ``metadata.annotations`` of one namespaced object (None removes a key); False when it is
    gone."""
    patch = {"metadata": {"annotations": annotations}}
    what = f"annotating {kind} {namespace}/{name}"
    if kind == "Pod" and api_version == "v1":
        response = call(
            what,
            lambda: client.CoreV1Api(api_client).patch_namespaced_pod(
                name, namespace, patch, _request_timeout=timeout, _preload_content=False
            ),
            absent=404,
        )
    else:
        api, resource = _custom_api(api_client, api_version, kind)
        response = call(
            what,
            lambda: _custom_call(api, resource, "patch", namespace, name, patch, timeout=timeout),
            absent=404,
        )
    if response is None:
        return False
    discard(response)
    return True


def read_object(
    api_client: client.ApiClient,
    api_version: str,
    kind: str,
    namespace: str | None,
    name: str,
    *,
    timeout: Timeout,
) -> dict[str, Any] | None:
    """GET one object of any API group; None when it (or its whole resource type, e.g. a CRD that is not
    installed) does not exist."""
    api, resource = _custom_api(api_client, api_version, kind)
    what = f"reading {kind} {namespace or ''}/{name}"
    response = call(
        what, lambda: _custom_call(api, resource, "get", namespace, name, timeout=timeout), absent=404
    )
    if response is None:
        return None
    found = read_json(response)
    found.setdefault("apiVersion", api_version)
    found.setdefault("kind", kind)
    return found
