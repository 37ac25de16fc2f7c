"""What a cluster serves of the workload APIs, and what gangweb cannot do without them.

Kubernetes 1.37 serves PodGroups and Workloads (``scheduling.k8s.io/v1beta1``) only with the
``GenericWorkload`` feature gate, which is off by default; CompositePodGroups (``v1alpha3``) only with the
``CompositePodGroup`` gate and that API version enabled; a Job's ``.spec.scheduling`` only with
``WorkloadWithJob`` (docs/kubernetes-versions.md). ``scheduler.kube.discovery`` reads a ``Served`` from the
API server once, so that gangweb says in words what it cannot do instead of failing on a 404 later.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

PODGROUPS_API = "scheduling.k8s.io/v1beta1"
COMPOSITE_API = "scheduling.k8s.io/v1alpha3"
# kube-apiserver's feature gates gangweb reads from its ``kubernetes_feature_enabled`` metric.
FEATURES = (
    "GenericWorkload",
    "CompositePodGroup",
    "WorkloadWithJob",
    "TopologyAwareWorkloadScheduling",
    "PodGroupPreemptionPolicy",
)


@dataclass(frozen=True)
class Served:
    """The answer of discovery: which kinds the API server serves, and its feature gates when readable."""

    podgroups: bool
    workloads: bool
    composite_podgroups: bool
    # The API server's feature gates as its metrics said (name -> on); empty when they could not be read.
    features: Mapping[str, bool] = field(default_factory=dict)
    # Where the answer came from: "discovery" (an API server), "simulation" (the demo's cluster).
    source: str = "discovery"

    @property
    def job_scheduling(self) -> bool | None:
        """Whether Jobs take ``.spec.scheduling`` and their controller makes their PodGroup (KEP-6089);
        None when the API server's feature gates could not be read."""
        return self.features.get("WorkloadWithJob")

    def limits(self) -> list[str]:
        """What gangweb cannot do on this cluster, one sentence each; empty when nothing is missing."""
        if not self.podgroups:
            return [
                f"The cluster does not serve PodGroups ({PODGROUPS_API}; Kubernetes 1.37 serves them only with "
                "the GenericWorkload feature gate on kube-apiserver, kube-scheduler and "
                "kube-controller-manager): gangweb cannot put pods in gangs, find gangs that wait or plan "
                "preemptions for them; the webhook leaves every pod as it is."
            ]
        out = []
        if not self.workloads:
            out.append(
                f"The cluster does not serve Workloads ({PODGROUPS_API}): gangs are read from PodGroups alone."
            )
        if not self.composite_podgroups:
            out.append(
                f"The cluster does not serve CompositePodGroups ({COMPOSITE_API}, feature gate "
                "CompositePodGroup): a victim unit is never larger than one PodGroup."
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "podGroups": self.podgroups,
            "workloads": self.workloads,
            "compositePodGroups": self.composite_podgroups,
            "jobScheduling": self.job_scheduling,
            "features": dict(sorted(self.features.items())),
            "limits": self.limits(),
        }


# A cluster that does not discover (the demo's simulation) holds every kind in memory.
EVERYTHING = Served(True, True, True, {name: True for name in FEATURES}, source="simulation")


@runtime_checkable
class Discovers(Protocol):
    """A cluster that can say what its API server serves (``scheduler.kube.KubeCluster``)."""

    def served(self, *, refresh: bool = False) -> Served:
        """Discovery's answer, read once and kept (``refresh`` reads it again)."""
        ...


def served_by(cluster: object) -> Served:
    """What ``cluster`` serves: discovery's answer, or everything for a cluster that does not discover."""
    return cluster.served() if isinstance(cluster, Discovers) else EVERYTHING


def parse_feature_metrics(text: str, names: tuple[str, ...] = FEATURES) -> dict[str, bool]:
    """``kubernetes_feature_enabled{name="X",stage="..."} 1`` lines of a Prometheus text page -> {X: on}
    for the gates in ``names``."""
    out: dict[str, bool] = {}
    for line in text.splitlines():
        if not line.startswith("kubernetes_feature_enabled{"):
            continue
        labels, _, value = line.partition("} ")
        for part in labels.removeprefix("kubernetes_feature_enabled{").split(","):
            key, _, quoted = part.partition("=")
            if key == "name" and quoted.strip('"') in names:
                try:
                    out[quoted.strip('"')] = float(value.split()[0]) == 1.0
                except (ValueError, IndexError):
                    pass
    return out
