"""Observe mode's ledger writes: the victims kube-scheduler preempted, as a plan of their own."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from scheduler.preemption.events import publish
from scheduler.preemption.facts import VictimFacts
from scheduler.preemption.ledger.history import lock_request, note, request_payload
from scheduler.preemption.models import Eviction, EvictionState, Plan, PlanSource


def record_observed_victims(
    request_id: int, units: dict[str, list[str]], pods: dict[str, VictimFacts]
) -> list[str]:
    """Add victims kube-scheduler preempted to the request's ``kube-scheduler`` plan; returns new pods."""
    with transaction.atomic():
        request = lock_request(request_id)
        observed, _ = Plan.objects.get_or_create(
            request=request,
            source=PlanSource.KUBE_SCHEDULER,
            defaults={
                "policy": "kube-scheduler",
                "feasible": True,
                "reason": "victims kube-scheduler preempted (DisruptionTarget / Preempted events)",
            },
        )
        known = {e.pod for e in observed.pod_evictions.all()}
        new: list[str] = []
        now = timezone.now()
        for unit, members in sorted(units.items()):
            for pod_key in members:
                if pod_key in known:
                    continue
                namespace, _, name = pod_key.partition("/")
                facts = pods.get(pod_key, VictimFacts())
                Eviction.objects.create(
                    plan=observed,
                    namespace=namespace,
                    name=name,
                    pod_uid=facts.uid,
                    node=facts.node,
                    gpus=facts.gpus,
                    victim_unit=unit,
                    state=EvictionState.EVICTED,
                    api_message="observed: preempted by kube-scheduler",
                    finished_at=now,
                )
                new.append(pod_key)
        if not new:
            return []
        rows = list(observed.pod_evictions.all())
        grouped: dict[str, list[str]] = {}
        for row in rows:
            grouped.setdefault(row.victim_unit, []).append(row.pod)
        observed.victims = [
            {
                "kind": unit.split(" ", 1)[0],
                "namespace": unit.split(" ", 1)[1].partition("/")[0],
                "name": unit.split(" ", 1)[1].partition("/")[2],
                "pods": sorted(members),
            }
            for unit, members in sorted(grouped.items())
        ]
        observed.evictions = sorted(row.pod for row in rows)
        observed.victim_units = len(grouped)
        observed.evicted_pods = len(rows)
        observed.evicted_gpus = sum(row.gpus for row in rows)
        observed.save()
        note(
            "observed.preemption",
            f"kube-scheduler preempted {len(new)} pods for {request.podgroup}: {', '.join(new[:10])}",
            request=request,
            plan=observed,
            data={"pods": new},
        )
        publish("observed.preemption", {**request_payload(request), "plan": observed.pk, "pods": new})
        return new
