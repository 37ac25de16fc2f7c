"""Everything the adapter asks of the API server is allowed by the ClusterRole gangweb deploys."""

from __future__ import annotations

from urllib.parse import parse_qs

import yaml

from kubetestserver.httpapi import parse_route
from scheduler.cluster import ClusterEvent
from tests.conftest import ROOT


def cluster_role_rules() -> list[dict]:
    documents = yaml.safe_load_all((ROOT / "deploy" / "base" / "rbac.yaml").read_text())
    (role,) = [
        d for d in documents if d and d.get("kind") == "ClusterRole" and d["metadata"]["name"] == "gangweb"
    ]
    return role["rules"]


def needed_permission(request: dict) -> tuple[str, str, str]:
    route = parse_route(request["path"])
    assert route is not None, request
    resource = route.resource.plural + (f"/{route.subresource}" if route.subresource else "")
    method, query = request["method"], parse_qs(request["query"])
    if method == "GET":
        verb = "get" if route.name else ("watch" if query.get("watch") == ["true"] else "list")
    else:
        verb = {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}[method]
    return route.resource.group, resource, verb


def allowed(rules: list[dict], group: str, resource: str, verb: str) -> bool:
    return any(
        group in rule.get("apiGroups", [])
        and resource in rule.get("resources", [])
        and (verb in rule.get("verbs", []) or "*" in rule.get("verbs", []))
        for rule in rules
    )


def test_the_deployed_cluster_role_allows_every_adapter_request(server, cluster):
    cluster.start()
    cluster.fresh_snapshot()
    cluster.get_pod("team-a", "solo")
    cluster.evict("team-a", "solo", dry_run=True)
    cluster.evict("team-a", "solo", uid="some-uid")
    cluster.delete_pod("team-a", "low-1", uid=cluster.get_pod("team-a", "low-1")["metadata"]["uid"])
    cluster.mark_disruption_target("team-a", "low-0", "preempting")
    cluster.record_event(
        ClusterEvent(
            "team-a",
            "Pod",
            "low-0",
            "Preempted",
            "by test",
            related_kind="PodGroup",
            related_name="high-gang",
        )
    )
    cluster.set_podgroup_condition(
        "team-a", "high-gang", "PodGroupInitiallyScheduled", "False", "Unschedulable", "waiting"
    )
    cluster.list_events(reason="Preempted")  # observe mode reads kube-scheduler's preemptions
    rules = cluster_role_rules()
    needed = {needed_permission(r) for r in server.requests()}
    assert {"list", "watch", "get", "create", "patch", "delete"} <= {verb for _, _, verb in needed}
    missing = sorted(p for p in needed if not allowed(rules, *p))
    assert not missing, f"deploy/base/rbac.yaml lacks (apiGroup, resource, verb): {missing}"
