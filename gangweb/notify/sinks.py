"""What a sink may be (``check_url``) and what it receives (``body``): one message per ledger event.

The three shapes:

- ``cloudevents``: a CloudEvents 1.0 event in structured mode (``application/cloudevents+json``), ``type``
  ``io.gangweb.<ledger kind>`` (``io.gangweb.plan.created``), ``id`` the ledger event's id, ``subject`` the
  PodGroup, ``data`` the ledger event's payload;
- ``slack``: an incoming-webhook body, ``{"text": ...}``, one line that ends with the event's id;
- ``alertmanager``: Alertmanager's API v2, a list of one alert POSTed to ``<url>/api/v2/alerts``, the id
  among its labels (Alertmanager keeps one alert per label set: a repeat is the same alert).

A sink's URL is http(s) to a host in ``GANGWEB_NOTIFY_ALLOWED_HOSTS`` only: sinks are admin data, and the
list keeps a typo or a stolen admin session from making gangweb POST the ledger anywhere.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from gangweb.notify.models import SinkKind
from scheduler.engine.gangkey import split_gang_key

SOURCE = "gangweb.io/preemption"
TYPE_PREFIX = "io.gangweb."


class SinkError(ValueError):
    """A sink that may not be configured (the message says why, for a problem+json or one stderr line)."""


def check_url(url: str) -> str:
    """``url`` when gangweb may POST to it, else ``SinkError``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SinkError(f"a sink URL must be http:// or https:// with a host, not {url!r}")
    if parts.username or parts.password:
        raise SinkError("a sink URL must not carry credentials")
    allowed = {h.lower() for h in settings.GANGWEB_NOTIFY_ALLOWED_HOSTS}
    host = parts.hostname.lower()
    netloc = f"{host}:{parts.port}" if parts.port else host
    if host not in allowed and netloc not in allowed:
        raise SinkError(
            f"host {netloc} is not in GANGWEB_NOTIFY_ALLOWED_HOSTS ({', '.join(sorted(allowed)) or 'empty'})"
        )
    return url


def target(kind: str, url: str) -> str:
    """Where the body is POSTed: Alertmanager's URL is its base, the others are used as given."""
    if kind == SinkKind.ALERTMANAGER:
        return url.rstrip("/") + "/api/v2/alerts"
    return url


def summary(kind: str, payload: dict[str, Any]) -> str:
    """One line for people: what happened to which gang."""
    subject = payload.get("podGroup") or ""
    if kind == "eviction":
        what = f"pod {payload.get('pod')} {payload.get('state')} for {subject}"
    else:
        what = f"{kind} {subject}".strip()
        if payload.get("state"):
            what += f" ({payload['state']})"
    reason = payload.get("reason")
    return f"gangweb: {what}" + (f": {reason}" if reason else "")


def body(kind: str, sink_kind: str, event_id: str, at: datetime, payload: dict[str, Any]) -> tuple[Any, str]:
    """(the JSON body, its content type) of one ledger event for a sink of ``sink_kind``."""
    time = at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if sink_kind == SinkKind.CLOUDEVENTS:
        event = {
            "specversion": "1.0",
            "id": event_id,
            "source": SOURCE,
            "type": TYPE_PREFIX + kind,
            "time": time,
            "datacontenttype": "application/json",
            "data": payload,
        }
        if payload.get("podGroup"):
            event["subject"] = payload["podGroup"]
        return event, "application/cloudevents+json"
    if sink_kind == SinkKind.SLACK:
        return {"text": f"{summary(kind, payload)} [{event_id}]"}, "application/json"
    labels = {"alertname": "GangwebPreemption", "kind": kind, "event_id": event_id}
    try:
        namespace, name = split_gang_key(payload.get("podGroup") or "")
    except ValueError:
        pass  # an event of no gang: labelled by its kind alone
    else:
        labels |= {"namespace": namespace, "podgroup": name}
    if payload.get("state"):
        labels["state"] = str(payload["state"])
    alert = {
        "labels": labels,
        "annotations": {"summary": summary(kind, payload)},
        "startsAt": time,
        "endsAt": (at + timedelta(hours=1)).astimezone(UTC).isoformat().replace("+00:00", "Z"),
    }
    return [alert], "application/json"
