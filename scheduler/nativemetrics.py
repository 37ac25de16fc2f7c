"""kube-scheduler's own preemption figures, read from its ``/metrics``, to set beside gangweb's in observe mode.

kube-scheduler v1.37 counts workload-aware preemption (KEP-5710) in its metrics; the names below are the
ones its binary exports (docs/kubernetes-versions.md says where they were read). None of them carries a
gang: they are the scheduler's totals, shown beside the per-gang record that observe mode keeps from the
``Preempted`` events (``scheduler/preemption/observe.py``). A source is anything with ``read()``
(``NativeMetrics``); ``Scrape`` reads the metrics endpoint itself (``GANGWEB_SCHEDULER_METRICS_URL``).
Plain Python: the stdlib's HTTP client and a parser of the few lines of the text format that are read.
"""

from __future__ import annotations

import re
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

# kube-scheduler's names (subsystem "scheduler"): a pod group as preemptor, then a pod as preemptor.
WORKLOAD_ATTEMPTS = "scheduler_workload_preemption_attempts_total"  # {result}
WORKLOAD_VICTIMS = "scheduler_workload_preemption_victims"  # histogram: victims per pod group preemption
DISRUPTIONS = "scheduler_preemption_workload_disruptions"  # histogram {preemptor}: pod groups disrupted
PDB_VIOLATIONS = "scheduler_preemption_pdb_violations_total"  # {preemptor}
EVALUATION = "scheduler_preemption_evaluation_duration_seconds"  # histogram {preemptor, result}
EXECUTION = "scheduler_preemption_execution_duration_seconds"  # histogram {preemptor, result}
POD_ATTEMPTS = "scheduler_preemption_attempts_total"
POD_VICTIMS = "scheduler_preemption_victims"  # histogram: victims per pod preemption
READ = (
    WORKLOAD_ATTEMPTS,
    WORKLOAD_VICTIMS,
    DISRUPTIONS,
    PDB_VIOLATIONS,
    EVALUATION,
    EXECUTION,
    POD_ATTEMPTS,
    POD_VICTIMS,
)
# What the source is: not configured, answered, did not answer.
MISSING, OK, UNAVAILABLE = "missing", "ok", "unavailable"

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Labels = tuple[tuple[str, str], ...]


def parse(text: str, names: Iterable[str] = READ) -> dict[str, list[tuple[Labels, float]]]:
    """The samples of the named metrics (a histogram's ``_sum`` and ``_count`` under their own names)."""
    wanted = {n for name in names for n in (name, f"{name}_sum", f"{name}_count")}
    out: dict[str, list[tuple[Labels, float]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None or match.group(1) not in wanted:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        labels = tuple(sorted(_LABEL.findall(match.group(2) or "")))
        out.setdefault(match.group(1), []).append((labels, value))
    return out


def _total(samples: dict[str, list[tuple[Labels, float]]], name: str, **match: str) -> float:
    return float(
        sum(v for labels, v in samples.get(name, []) if all((k, m) in labels for k, m in match.items()))
    )


def _by(samples: dict[str, list[tuple[Labels, float]]], name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for labels, value in samples.get(name, []):
        key = dict(labels).get(label, "")
        out[key] = out.get(key, 0.0) + value
    return out


@dataclass
class NativeReading:
    """kube-scheduler's preemption totals since it started, as one read gave them (``state``: ``ok``,
    ``unavailable``, ``missing``; ``detail`` a person can read)."""

    state: str
    detail: str = ""
    read_at: float = 0.0
    # A pod group as preemptor (workload-aware preemption).
    attempts: dict[str, float] = field(default_factory=dict)  # by result
    preemptions: float = 0.0  # pod group preemptions that chose victims (the victims histogram's count)
    victims: float = 0.0  # victims they chose, summed
    disruptions: float = 0.0  # pod groups those victims disrupted
    pdb_violations: float = 0.0
    evaluations: float = 0.0
    evaluation_seconds: float = 0.0
    # A pod as preemptor (classic preemption).
    pod_attempts: float = 0.0
    pod_victims: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "detail": self.detail,
            "readAt": self.read_at or None,
            "podGroup": {
                "attempts": dict(sorted(self.attempts.items())),
                "preemptions": self.preemptions,
                "victims": self.victims,
                "disruptions": self.disruptions,
                "pdbViolations": self.pdb_violations,
                "evaluations": self.evaluations,
                "evaluationSecondsMean": (
                    self.evaluation_seconds / self.evaluations if self.evaluations else None
                ),
            },
            "pod": {"attempts": self.pod_attempts, "victims": self.pod_victims},
        }


def reading(text: str, read_at: float) -> NativeReading:
    """The figures from one ``/metrics`` answer."""
    s = parse(text)
    group = {"preemptor": "podgroup"}
    return NativeReading(
        OK,
        read_at=read_at,
        attempts=_by(s, WORKLOAD_ATTEMPTS, "result"),
        preemptions=_total(s, f"{WORKLOAD_VICTIMS}_count"),
        victims=_total(s, f"{WORKLOAD_VICTIMS}_sum"),
        disruptions=_total(s, f"{DISRUPTIONS}_sum", **group),
        pdb_violations=_total(s, PDB_VIOLATIONS, **group),
        evaluations=_total(s, f"{EVALUATION}_count", **group),
        evaluation_seconds=_total(s, f"{EVALUATION}_sum", **group),
        pod_attempts=_total(s, POD_ATTEMPTS),
        pod_victims=_total(s, f"{POD_VICTIMS}_sum"),
    )


class NativeMetrics(Protocol):
    """Where kube-scheduler's preemption figures come from."""

    def read(self) -> NativeReading: ...


class Scrape:
    """``GET url`` (kube-scheduler's ``/metrics``): over HTTPS, trusting ``cafile`` (none: the system's
    roots) and presenting ``certfile``/``keyfile`` when given, else with ``token`` as a bearer."""

    def __init__(
        self,
        url: str,
        *,
        cafile: str = "",
        certfile: str = "",
        keyfile: str = "",
        token: str = "",
        timeout: float = 5.0,
    ) -> None:
        self.url, self.token, self.timeout = url, token, timeout
        self.context: ssl.SSLContext | None = None
        if url.startswith("https:"):
            self.context = ssl.create_default_context(cafile=cafile or None)
            if certfile:
                self.context.load_cert_chain(certfile, keyfile or None)

    def read(self) -> NativeReading:
        request = urllib.request.Request(self.url, headers={"Accept": "text/plain"})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as answer:
                text = answer.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return NativeReading(UNAVAILABLE, f"kube-scheduler's metrics answered {exc.code} at {self.url}")
        except (OSError, ValueError) as exc:
            return NativeReading(UNAVAILABLE, f"kube-scheduler's metrics did not answer at {self.url}: {exc}")
        return reading(text, time.time())


class Unconfigured:
    def read(self) -> NativeReading:
        return NativeReading(MISSING, "no kube-scheduler metrics URL is set (GANGWEB_SCHEDULER_METRICS_URL)")
