"""A small world of two tenants for the API v1 tests, and readers cut to one of them.

The readers are real: a user made by ``manage.py access grant USER --role ROLE --namespaces team-a``
and a token printed by ``manage.py access token USER``, sent as ``Authorization: Bearer gwt_...``, so
every request goes through the product's own authentication classes (``gangweb.access.authentication``)
and ``scope_for``. The admin is a superuser signing in with Basic (admin everywhere without a grant).
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import pytest
from django.core.management import call_command
from rest_framework.throttling import ScopedRateThrottle

from gangweb import tasks
from gangweb.api.v1 import store
from gangweb.clusterview import rows as cluster_rows
from gangweb.dashboard import history, live
from scheduler.preemption import runtime
from scheduler.preemption.models import Eviction, LedgerEntry, Plan, PreemptionRequest
from tests.scheduler.preemption.builders import FakeCluster, node, pod, podgroup, small_cluster

# What a team-a reader must never read, anywhere in an answer.
HIDDEN = ("team-b", "batch", "hidden-b")


@pytest.fixture(autouse=True)
def v1_settings(settings, monkeypatch):
    settings.DEMO = False
    settings.GANGWEB_API_CLUSTER_CACHE_SECONDS = 0
    # DRF reads the rates once, at import: the tests (schemathesis above all) are not throttled.
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"simulate": "100000/min"})
    store.DECISIONS.clear()
    store.USAGE.clear()
    cluster_rows.forget()
    live.reset()
    yield
    store.DECISIONS.clear()
    store.USAGE.clear()
    cluster_rows.forget()
    live.reset()


def token_reader(username: str, role: str, *where: str) -> dict[str, str]:
    """``access grant USERNAME --role ROLE WHERE...`` then ``access token USERNAME``: the test client's
    headers of that user (``Authorization: Bearer gwt_...``)."""
    call_command("access", "grant", username, "--role", role, *where, stdout=io.StringIO())
    printed = io.StringIO()
    call_command("access", "token", username, stdout=printed)
    token = printed.getvalue().strip()
    assert token.startswith("gwt_"), token
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


@pytest.fixture
def a_viewer(db) -> dict[str, str]:
    """A viewer of team-a only."""
    return token_reader("viewer-a", "viewer", "--namespaces", "team-a")


@pytest.fixture
def a_operator(db) -> dict[str, str]:
    """An operator of team-a only."""
    return token_reader("operator-a", "operator", "--namespaces", "team-a")


def basic(username: str, password: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}


@pytest.fixture
def admin(django_user_model):
    django_user_model.objects.create_superuser("ops", password="s3cret-enough")
    return basic("ops", "s3cret-enough")


@dataclass
class World:
    requests: dict[str, PreemptionRequest]
    plans: dict[str, Plan]
    evictions: dict[str, Eviction]
    entries: dict[str, LedgerEntry]
    cluster: FakeCluster


def world_objects() -> list[dict]:
    """small_cluster for team-a (batch gangs hold node-0..3, team-a/train waits), plus team-b: a running
    gang ``hidden-b`` on node-4 and a waiting one."""
    objects = small_cluster("team-a")
    objects += [node("node-4", rack="rack-2")]
    objects += [podgroup("team-b", "hidden-b", min_count=1, priority=50)]
    objects += [pod("team-b", "hidden-b-0", group="hidden-b", priority=50, node_name="node-4")]
    objects += [podgroup("team-b", "waiting-b", min_count=1, priority=60, unschedulable=True)]
    objects += [pod("team-b", "waiting-b-0", group="waiting-b", priority=60)]
    objects += queue_objects()
    return objects


def queue_objects() -> list[dict]:
    """Kueue: ClusterQueue shared (LocalQueues team-a/main and team-b/main) and hidden-b-cq (team-b's only)."""
    api = "kueue.x-k8s.io/v1beta2"
    quota = [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16"}]}],
        }
    ]
    return [
        {"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {}},
        {
            "apiVersion": api,
            "kind": "ClusterQueue",
            "metadata": {"name": "shared"},
            "spec": {"cohortName": "all", "resourceGroups": quota},
        },
        {
            "apiVersion": api,
            "kind": "ClusterQueue",
            "metadata": {"name": "hidden-b-cq"},
            "spec": {"cohortName": "all", "resourceGroups": quota},
        },
        {
            "apiVersion": api,
            "kind": "LocalQueue",
            "metadata": {"name": "main", "namespace": "team-a"},
            "spec": {"clusterQueue": "shared"},
        },
        {
            "apiVersion": api,
            "kind": "LocalQueue",
            "metadata": {"name": "main", "namespace": "team-b"},
            "spec": {"clusterQueue": "shared"},
        },
        {
            "apiVersion": api,
            "kind": "LocalQueue",
            "metadata": {"name": "own", "namespace": "team-b"},
            "spec": {"clusterQueue": "hidden-b-cq"},
        },
    ]


@pytest.fixture
def world(make_request) -> World:
    """Ledger rows of both teams made by the real pipeline, the two-tenant cluster, decisions, a usage
    sample and a sample of the GPU map's history."""
    made = {"team-a": make_request("team-a"), "team-b": make_request("team-b", refuse=True)}
    cluster = FakeCluster(world_objects())
    runtime.set_cluster(cluster)
    decisions = []
    for namespace, gang in (("team-a", "train"), ("team-b", "waiting-b")):
        decisions.append(
            {
                "uid": f"uid-{namespace}",
                "webhook": "mutate",
                "kind": "Pod",
                "namespace": namespace,
                "name": f"{gang}-0",
                "operation": "CREATE",
                "dryRun": False,
                "allowed": True,
                "message": f"put into PodGroup {namespace}/{gang}",
                "warnings": [],
                "podGroup": gang,
                "source": "gangweb",
                "minCount": 1,
                "mode": "enforce",
            }
        )
    store.DECISIONS.push(decisions)
    tasks.sample_usage()  # the beat's task, as in production
    live.reset()  # the GPU map (map/, overview/) of this cluster, and one sample of the overview's chart
    history.maybe_sample(live.current()[0], force=True)
    return World(
        requests={ns: m.request for ns, m in made.items()},
        plans={ns: m.plan for ns, m in made.items()},
        evictions={ns: m.plan.pod_evictions.order_by("id").first() for ns, m in made.items()},
        entries={ns: LedgerEntry.objects.filter(namespace=ns).order_by("id").first() for ns in made},
        cluster=cluster,
    )
