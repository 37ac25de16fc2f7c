"""The end-to-end trials of ``bench watch``: one preemptor at a time, each on the cluster as it was loaded.

For each preemptor this process sets ``PodGroupInitiallyScheduled=False`` on its PodGroup and times the
first real (not dry-run) eviction the API test server answers. Then it waits for the gang's requests to
end, marks the gang scheduled (condition ``True``: no later detection pass reopens it) and re-creates the
pods the worker evicted. The restore matters: the test server has no kube-scheduler, so the preemptor's
pods stay pending, and the room one trial freed would otherwise make the next preemptor "fit" without
evictions. Only requests opened since the trial began count (a ledger row of an earlier size or trial is
not this trial's answer).

Each trial's evictions are compared with the plan made in this process on the loaded objects
(``matches_in_process``): the worker plans on its watch cache's live snapshot, so a cache missing or
keeping objects shows up here as a different victim set.
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

FINISH_TIMEOUT = 300.0  # a trial's requests end well within this even at 20,000 nodes on a loaded machine


def request(url: str, method: str, body: Any, content_type: str = "application/json") -> None:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method=method)
    req.add_header("Content-Type", content_type)
    with urllib.request.urlopen(req, timeout=30) as resp:
        resp.read()


def wait(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def expected_evictions(objects: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Per preemptor (PodGroup name): the pods the engine evicts for it on ``objects``, planned here."""
    from scheduler.engine import parse_snapshot, plan
    from testkit.synthetic import PREEMPTORS, preemptor_name

    snapshot = parse_snapshot(objects)
    return {
        preemptor_name(g).split("/")[1]: sorted(plan(snapshot, preemptor_name(g)).evictions)
        for g, _, _ in PREEMPTORS
    }


def _set_condition(base: str, name: str, status: str) -> None:
    from testkit.synthetic import NAMESPACE

    url = f"{base}/apis/scheduling.k8s.io/v1beta1/namespaces/{NAMESPACE}/podgroups/{name}/status"
    condition = {
        "type": "PodGroupInitiallyScheduled",
        "status": status,
        "reason": "Unschedulable" if status == "False" else "Scheduled",
        "message": "bench",
        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    request(url, "PATCH", {"status": {"conditions": [condition]}}, "application/merge-patch+json")


def _evicted(control: Any) -> list[tuple[float, str]]:
    """(time, ns/name) of each real eviction the server granted since its request log was cleared."""
    out = []
    for e in control.requests("/eviction", method="POST"):
        if "dryRun" in (e["query"] or "") or e["code"] not in (200, 201):
            continue
        parts = e["path"].split("/")  # /api/v1/namespaces/{ns}/pods/{name}/eviction
        out.append((e["time"], f"{parts[4]}/{parts[6]}"))
    return out


def _requests(name: str, since: datetime):
    from scheduler.preemption.models import PreemptionRequest
    from testkit.synthetic import NAMESPACE

    return PreemptionRequest.objects.filter(namespace=NAMESPACE, name=name, created_at__gte=since)


def _active_states() -> tuple[str, ...]:
    from scheduler.preemption.models import ACTIVE_REQUEST_STATES

    return tuple(ACTIVE_REQUEST_STATES)


def victims(name: str, since: datetime) -> set[str]:
    """The pods gangweb's requests for ``name`` since ``since`` asked the Eviction API to evict, by name: the
    ledger's word, which a watch may deliver late."""
    from scheduler.preemption.models import Eviction

    return set(
        Eviction.objects.filter(plan__request__in=_requests(name, since), requested_at__isnull=False)
        .values_list("name", flat=True)
        .distinct()
    )


def _settled(name: str, since: datetime) -> bool:
    rows = _requests(name, since)
    return rows.exists() and not rows.filter(state__in=_active_states()).exists()


# The ledger entries that mark a trial's phases, in the order they happen (docs/kube.md, "Figures").
PHASES = (
    ("request.opened", "detected"),  # the watch event, the trigger's enqueue and the detection pass
    ("request.planning", "planning"),
    ("plan.created", "planned"),
    ("request.executing", "executing"),  # the plan persisted and the execution task started
    ("execution.recheck", "rechecked"),
    ("eviction.dry_run", "dry_runs_done"),  # the last one
    ("execution.evicting", "evicting"),
)


def timeline(name: str, since: datetime, t0: float, first_eviction: float) -> dict[str, Any]:
    """Seconds from the condition's PATCH to each phase of the trial's first request (ledger timestamps),
    the re-check's own parts, and the first real eviction the server answered."""
    from django.db.models import Q

    from scheduler.preemption.models import LedgerEntry

    first = _requests(name, since).order_by("id").first()
    if first is None:
        return {}
    entries = LedgerEntry.objects.filter(Q(request=first) | Q(plan__request=first)).order_by(
        "created_at", "id"
    )
    out: dict[str, Any] = {}
    for entry in entries:
        label = dict(PHASES).get(entry.kind)
        if label is None or (label in out and label != "dry_runs_done"):
            continue
        out[label] = round(entry.created_at.timestamp() - t0, 3)
        if entry.kind == "execution.recheck":
            out["recheck_parts"] = (entry.data or {}).get("seconds", {})
        if entry.kind == "plan.created":
            out["plan_parts"] = (entry.data or {}).get("seconds", {})
    out["first_eviction"] = round(first_eviction, 3)
    return out


def phase_medians(timelines: list[dict[str, Any]]) -> dict[str, float]:
    """Per phase, the median of the seconds it took after the phase before it."""
    labels = [label for _, label in PHASES] + ["first_eviction"]
    out = {}
    for before, after in zip(["start", *labels], labels):
        steps = [
            t[after] - t.get(before, 0.0)
            for t in timelines
            if after in t and (before == "start" or before in t)
        ]
        if steps:
            out[f"{before}->{after}"] = round(statistics.median(steps), 3)
    return out


def _trial(base: str, control: Any, name: str, log: str) -> tuple[str, Any, list[str], dict[str, Any]]:
    """One preemptor's trial: ("evicted", seconds to the first eviction) or ("none", how its request
    ended), and the pods evicted for it, once its requests have ended and the gang is marked scheduled."""
    control.clear_requests()
    since = datetime.now(UTC)
    t0 = time.time()
    _set_condition(base, name, "False")

    def outcome():
        evictions = _evicted(control)
        if evictions:
            return ("evicted", min(t for t, _ in evictions) - t0)
        done = _requests(name, since).exclude(state__in=_active_states()).order_by("-id").first()
        return ("none", f"{done.state}: {done.reason}") if done else None

    kind, value = wait(outcome, 120, f"the first eviction for {name} (worker log {log})")
    phases = timeline(name, since, t0, value) if kind == "evicted" else {}
    wait(lambda: _settled(name, since), FINISH_TIMEOUT, f"the end of {name}'s request (worker log {log})")
    _set_condition(base, name, "True")  # scheduled, as kube-scheduler would report it
    wait(lambda: _settled(name, since), FINISH_TIMEOUT, f"the end of {name}'s requests (worker log {log})")
    return kind, value, sorted({key for _, key in _evicted(control)}), phases


def run_trials(
    base: str, control: Any, objects: list[dict[str, Any]], expected: dict[str, list[str]], log: str
) -> dict[str, Any]:
    """Every preemptor's trial in turn; the figures ``bench watch`` reports for them."""
    originals = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"
    }
    latencies: list[float] = []
    skipped: list[str] = []
    mismatches: list[str] = []
    timelines: list[dict[str, Any]] = []
    for name, wanted in expected.items():
        kind, value, evicted, phases = _trial(base, control, name, log)
        if kind == "evicted":
            latencies.append(value)
            timelines.append(phases)
        else:
            skipped.append(f"{name}: {value}")
        if evicted != wanted:
            mismatches.append(f"{name}: worker evicted {len(evicted)} pods, in-process plan {len(wanted)}")
        for key in evicted:  # the cluster as loaded again for the next trial
            body = json.loads(json.dumps(originals[key]))
            body["metadata"].pop("resourceVersion", None)
            ns = body["metadata"]["namespace"]
            request(f"{base}/api/v1/namespaces/{ns}/pods", "POST", body)
        time.sleep(2)  # the worker's watch sees the re-created pods before the next trial's condition
    return {
        "trials_without_eviction": skipped,
        "trials_not_matching_in_process_plan": mismatches,
        "unschedulable_to_first_eviction_s": [round(x, 3) for x in latencies],
        "first_eviction_timelines_s": timelines,
        "first_eviction_phase_p50_s": phase_medians(timelines),
        "unschedulable_to_first_eviction_p50_s": (
            round(statistics.median(latencies), 3) if latencies else None
        ),
    }
