"""Version conversion for resources served under two API groups with one storage.

Events are stored in their core/v1 shape; ``events.k8s.io/v1`` is a view of the same objects, as on a
real API server (an event created through one group is listed through the other).
"""

from __future__ import annotations

from scheduler.kube.resources import EVENTS, EVENTS_V1, Resource

# events.k8s.io/v1 field -> core/v1 field
_EVENT_FIELDS = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_CORE_FIELDS = {v: k for k, v in _EVENT_FIELDS.items()}


def _rename(obj: dict, names: dict[str, str]) -> dict:
    return {names.get(k, k): v for k, v in obj.items()}


def to_storage(resource: Resource, obj: dict) -> dict:
    """The object as stored, whatever version it arrived in."""
    if resource == EVENTS_V1:
        obj = _rename(obj, _EVENT_FIELDS)
        obj["apiVersion"], obj["kind"] = EVENTS.api_version, EVENTS.kind
        return obj
    obj = dict(obj)
    obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
    return obj


def from_storage(resource: Resource, obj: dict) -> dict:
    """The stored object in the shape of the version the client asked for."""
    if resource == EVENTS_V1:
        obj = _rename(obj, _CORE_FIELDS)
    else:
        obj = dict(obj)
    obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
    return obj
