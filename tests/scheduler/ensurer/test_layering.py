"""The ensurer's logic stays free of Django, Celery and the kubernetes client (docs/ARCHITECTURE.md)."""

from tests.conftest import ROOT
from tests.test_layering import imported_roots


def test_the_ensurer_logic_imports_no_framework():
    roots = imported_roots(ROOT / "scheduler" / "podgroup_ensurer.py")
    assert "admission" in roots  # it builds groups with the webhook's own inference
    assert not roots & {"django", "celery", "kubernetes", "redis", "channels"}
