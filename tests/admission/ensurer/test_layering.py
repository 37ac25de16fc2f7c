"""The ensurer's logic stays free of Django, Celery and the kubernetes client (docs/ARCHITECTURE.md; the
import contracts in pyproject.toml keep the webhook's modules off the pipeline)."""

from tests.conftest import ROOT
from tests.test_layering import imported_modules, imported_roots


def test_the_ensurer_logic_imports_no_framework():
    roots = imported_roots(ROOT / "admission" / "ensurer.py")
    assert not roots & {"django", "celery", "kubernetes", "redis", "channels"}
    # Of the scheduler package, only the pure Cluster protocol and its error, the pod-state rules and the
    # trace hook (which imports nothing of OpenTelemetry unless traces are on).
    assert {m for m in imported_modules(ROOT / "admission" / "ensurer.py") if m.startswith("scheduler")} <= {
        "scheduler.cluster",
        "scheduler.cluster.Cluster",
        "scheduler.cluster.ClusterError",
        "scheduler.cluster.KubeObject",
        "scheduler",
        "scheduler.podstate",
        "scheduler.tracing",
    }
