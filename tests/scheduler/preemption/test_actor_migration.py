"""Migration scheduler.0005_typed_actors: decisions recorded before kinds were stay readable, each marked
with the kind that can be told (else ``unknown``), in the request row and in its history entries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("scheduler", "0004_plan_resource_versions")]
AFTER = [("scheduler", "0005_typed_actors")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def latest():
    """Every app's newest migration: where the database must be left for the tests that follow."""
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def test_old_decisions_are_marked_with_the_kind_that_can_be_told():
    old = migrate(BEFORE)
    Request = old.get_model("scheduler", "PreemptionRequest")
    Entry = old.get_model("scheduler", "LedgerEntry")
    decided = {
        "oper-b": ("rejected", "rejected by oper-b"),
        "system:serviceaccount:team-llm:ci": ("cancelled", "cancelled by ..."),
        "oidc:alice": ("rejected", "rejected by oidc:alice"),
        "gangweb": ("expired", "not approved in time"),
    }
    ids = {}
    for i, (by, (state, message)) in enumerate(decided.items()):
        row = Request.objects.create(
            namespace="team-llm", name=f"g{i}", mode="approve", state=state, decided_by=by
        )
        Entry.objects.create(kind=f"request.{state}", request=row, message=message, data={"by": by})
        ids[by] = row.pk
    untouched = Request.objects.create(namespace="team-llm", name="open", mode="approve", state="pending")
    try:
        new = migrate(AFTER)
        assert new.get_model("scheduler", "PreemptionRequest")._meta.get_field("decided_by_kind")
        # Read through today's models, so on today's schema (later migrations add columns, touch no data).
        migrate(latest())
        from scheduler.preemption.models import LedgerEntry, PreemptionRequest

        expected = {
            "oper-b": ("unknown", "oper-b"),  # a local or a Kubernetes user: it cannot be told now
            "system:serviceaccount:team-llm:ci": ("k8s-sa", "team-llm/ci"),
            "oidc:alice": ("k8s-user", "oidc:alice"),
            "gangweb": ("gangweb", "gangweb"),
        }
        for by, (kind, name) in expected.items():
            row = PreemptionRequest.objects.get(pk=ids[by])
            assert (row.decided_by_kind, row.decided_by) == (kind, name), by
            assert (row.decider.kind, row.decider.name) == (kind, name)
            assert LedgerEntry.objects.get(request=row).data["by"] == {"kind": kind, "name": name}
        assert PreemptionRequest.objects.get(pk=untouched.pk).decider is None
        assert PreemptionRequest.objects.get(pk=ids["oper-b"]).decider.display == "oper-b (kind unknown)"
    finally:
        migrate(latest())  # the rest of the suite runs on the newest schema
