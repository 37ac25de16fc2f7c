"""Idle GPUs from the Prometheus that scrapes NVIDIA's dcgm-exporter, joined to pods and gangs.

One instant query per refresh (``query``) counts, per pod and per DRA claim, the GPUs whose highest
activity over the window stayed below the threshold: ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (a ratio), or
``DCGM_FI_DEV_GPU_UTIL`` (percent) where the profiling metrics are off; a GPU (``UUID``) seen in several
series of one pod (one per container) counts once. Prometheus does the counting, so the answer has a row
per pod with idle GPUs, not one per GPU. ``join`` then gives each row to the pods it names, by
dcgm-exporter's own labels: the DRA labels (``dra_claim_namespace``, ``dra_claim_name``: the consumers of
a shared claim share its GPUs) else ``namespace``/``pod``. A row that names nothing gangweb knows is
*unknown*, never idle; an answer Prometheus marks partial, or no answer, counts nothing (docs/idle.md).
Plain Python: the stdlib's HTTP client, and msgspec to decode the answer straight into the few fields read
(a row per pod at 160,000 GPUs is megabytes of JSON: docs/idle.md "Benchmark").
"""

from __future__ import annotations

import base64
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

PROFILING, UTILISATION = "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"
# What the activity source is: not configured, answered, answered in part, did not answer.
MISSING, OK, PARTIAL, UNAVAILABLE = "missing", "ok", "partial", "unavailable"


JOIN_LABELS = "namespace, pod, dra_claim_namespace, dra_claim_name"


class Labels(msgspec.Struct, frozen=True, gc=False):
    """The labels a row is joined by (``JOIN_LABELS``); dcgm-exporter leaves out the ones it has not."""

    namespace: str = ""
    pod: str = ""
    dra_claim_namespace: str = ""
    dra_claim_name: str = ""


def promql(window_seconds: int, threshold: float) -> str:
    """The one query: per pod and claim, how many GPUs stayed below ``threshold`` (0-1) over the window,
    the profiling metric where a GPU has it (``or`` keeps the left side for a series both have)."""
    w = f"{int(window_seconds)}s"
    activity = f"max_over_time({PROFILING}[{w}]) or (max_over_time({UTILISATION}[{w}]) / 100)"
    per_gpu = f"max by (UUID, Hostname, gpu, {JOIN_LABELS}) ({activity})"
    return f"count by ({JOIN_LABELS}) ({per_gpu} < {float(threshold)!r})"


@dataclass
class Reading:
    """What one query gave: ``state`` (``ok``, ``partial``, ``unavailable``, ``missing``), the rows
    (join labels, idle GPUs), a ``detail`` a person can read, and how long the query took."""

    state: str
    series: list[tuple[Labels, float]] = field(default_factory=list)
    detail: str = ""
    seconds: float = 0.0


def query(
    url: str, *, window_seconds: int, threshold: float, token: str = "", timeout: float = 5.0
) -> Reading:
    """Ask Prometheus (``url``: its base, with ``user:password@`` for basic auth) over its HTTP API."""
    import time

    if not url:
        return Reading(MISSING, detail="no activity source: GANGWEB_PROMETHEUS_URL is not set")
    parts = urllib.parse.urlsplit(url)
    base = parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else "")).geturl()
    request = urllib.request.Request(
        base.rstrip("/")
        + "/api/v1/query?"
        + urllib.parse.urlencode({"query": promql(window_seconds, threshold)}),
        headers={"Accept": "application/json"},
    )
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    elif parts.username:
        pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(pair.encode()).decode())
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            body = answer.read()
    except urllib.error.HTTPError as exc:
        return Reading(UNAVAILABLE, detail=f"Prometheus answered {exc.code} {exc.reason}")
    except OSError as exc:  # refused, timed out
        return Reading(UNAVAILABLE, detail=f"Prometheus did not answer: {exc}")
    seconds = time.perf_counter() - started
    return parse(body, seconds=seconds)


class _Sample(msgspec.Struct, gc=False):
    metric: Labels = msgspec.field(default_factory=Labels)
    value: tuple[float, float] = (0.0, math.nan)  # [time, "value"]: the string decoded as a number


class _Data(msgspec.Struct, gc=False):
    result: list[_Sample] = []


class _Answer(msgspec.Struct, gc=False):
    """The part of an ``/api/v1/query`` answer read here (Prometheus' HTTP API, an instant vector)."""

    status: str = ""
    data: _Data | None = None
    error: str | None = None
    warnings: list[str] | None = None


# Not strict: the sample's value, a string ("3", "NaN"), is decoded as the number it writes.
_decode = msgspec.json.Decoder(_Answer, strict=False).decode


def parse(body: bytes, *, seconds: float = 0.0) -> Reading:
    """A Prometheus ``/api/v1/query`` answer (the bytes it sent) as a ``Reading``; an answer of another
    shape, or with a value that is not a number, is ``unavailable``, never read in part."""
    try:
        answer = _decode(body)
    except msgspec.DecodeError as exc:
        return Reading(UNAVAILABLE, detail=f"Prometheus answered no instant vector: {exc}", seconds=seconds)
    if answer.status != "success" or answer.data is None:
        return Reading(
            UNAVAILABLE,
            detail=f"Prometheus refused the query: {answer.error or 'no answer'}",
            seconds=seconds,
        )
    series = [(s.metric, s.value[1]) for s in answer.data.result if not math.isnan(s.value[1])]
    if answer.warnings:  # a partial answer: some targets or shards missing, so no GPU can be called idle
        return Reading(PARTIAL, series, detail="; ".join(answer.warnings)[:500], seconds=seconds)
    return Reading(OK, series, detail=f"{len(series)} rows of idle GPUs", seconds=seconds)


def count_idle(
    series: Iterable[tuple[str, dict[str, str], float]], threshold: float
) -> list[tuple[Labels, float]]:
    """What the query answers, worked out here from dcgm-exporter-shaped series (metric, labels, value) of
    one moment (a cluster that reports its own activity, ``scheduler.cluster.ReportsActivity``): per pod
    and claim, the GPUs below ``threshold``, a GPU in several series of one pod counted once."""
    per_gpu: dict[tuple, float] = {}
    for metric, labels, value in series:
        ratio = value / 100 if metric == UTILISATION else value
        wanted = tuple(
            labels.get(k, "") for k in ("namespace", "pod", "dra_claim_namespace", "dra_claim_name")
        )
        gpu = (labels.get("UUID", ""), labels.get("Hostname", ""), labels.get("gpu", ""), *wanted)
        per_gpu[gpu] = max(per_gpu.get(gpu, ratio), ratio)
    counts: dict[tuple, float] = {}
    for gpu, ratio in per_gpu.items():
        if ratio < threshold:
            counts[gpu[3:]] = counts.get(gpu[3:], 0.0) + 1
    return [(Labels(*key), n) for key, n in sorted(counts.items())]


@dataclass
class Joined:
    """Idle GPUs per pod (pod key -> GPUs, a shared claim's split among its consumers) and the idle GPUs
    that could not be joined: ``unknown`` (labels missing, or naming no pod or claim gangweb knows)."""

    pods: dict[str, float] = field(default_factory=dict)
    unknown: int = 0


def join(
    rows: Iterable[tuple[Labels, float]],
    bound: Container[str],
    objects: Iterable[dict[str, Any]] = (),
) -> Joined:
    """Give every row to the pods it names. ``bound``: the keys (namespace/name) of the cluster's live pods
    bound to a node (a reading's index, ``gangweb.clusterview.reading``, else ``podstate.bound_by_key``): a
    row's pod is looked up, not searched for among every pod, and the pods themselves are not read (at
    160,000 GPUs, reading each pod's fields costs more than the rest of the join: docs/idle.md). A claim's
    consumers come from ``objects``' ResourceClaims, read only when a row names a claim."""
    out = Joined()
    unknown = 0.0
    consumers: dict[str, list[str]] | None = None
    for labels, gpus in rows:
        namespace, claim = labels.namespace, labels.dra_claim_name
        if not claim:  # most rows: one pod's own GPUs
            key = f"{namespace}/{labels.pod}"
            if namespace and labels.pod and key in bound:
                out.pods[key] = out.pods.get(key, 0.0) + gpus
            else:
                unknown += gpus
            continue
        if consumers is None:
            consumers = _consumers(objects)
        namespace = labels.dra_claim_namespace or namespace
        users = [p for p in consumers.get(f"{namespace}/{claim}", ()) if p in bound]
        if not users:
            unknown += gpus
            continue
        for user in users:
            out.pods[user] = out.pods.get(user, 0.0) + gpus / len(users)
    out.unknown = round(unknown)
    return out


def _consumers(objects: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """The pods (namespace/name) each ResourceClaim is reserved for, by claim."""
    out = {}
    for obj in objects:
        if obj.get("kind") == "ResourceClaim":
            meta = obj.get("metadata") or {}
            reserved = (obj.get("status") or {}).get("reservedFor") or []
            out[f"{meta.get('namespace')}/{meta.get('name')}"] = [
                f"{meta.get('namespace')}/{r.get('name')}" for r in reserved if r.get("resource") == "pods"
            ]
    return out
