"""KubeCluster against the test server, configured only through a kubeconfig."""

from __future__ import annotations

import time

import pytest

from scheduler.cluster import Cluster, ClusterError, ClusterEvent, of_kind
from scheduler.kube import KubeCluster
from scheduler.kube.resources import EVENTS_V1, NODES, PDBS, PODGROUPS, PODS

from .objects import node, pod


def names(objects, kind):
    return sorted(o["metadata"]["name"] for o in of_kind(objects, kind))


def test_it_is_a_cluster(cluster):
    assert isinstance(cluster, Cluster)


def test_snapshot_has_every_kind_with_api_version_and_kind_set(cluster):
    objects = cluster.start().snapshot_objects()
    assert names(objects, "Pod") == ["high-0", "high-1", "low-0", "low-1", "solo"]
    assert names(objects, "Node") == ["node-1", "node-2"]
    assert names(objects, "PodGroup") == ["high-gang", "low-gang"]
    assert names(objects, "PodDisruptionBudget") == ["low-pdb"]
    assert names(objects, "PriorityClass") == ["batch-low", "train-high"]
    by_kind = {o["kind"]: o["apiVersion"] for o in objects}
    assert by_kind == {
        "Node": "v1",
        "Pod": "v1",
        "PodGroup": "scheduling.k8s.io/v1beta1",
        "PodDisruptionBudget": "policy/v1",
        "PriorityClass": "scheduling.k8s.io/v1",
    }
    assert all(o["metadata"]["resourceVersion"] for o in objects)


def test_snapshot_keeps_fields_the_client_models_do_not_know(server, cluster):
    server.store.validator = None  # a field from a newer Kubernetes than the schemas know
    server.store.patch(
        PODS, "team-a", "solo", "application/merge-patch+json", {"spec": {"futureField": {"x": 1}}}
    )
    objects = cluster.start().snapshot_objects()
    solo = next(o for o in objects if o["metadata"]["name"] == "solo")
    assert solo["spec"]["futureField"] == {"x": 1}


def test_without_start_the_snapshot_is_listed_fresh(server, cluster):
    assert names(cluster.snapshot_objects(), "Node") == ["node-1", "node-2"]
    server.store.create(NODES, node("node-3"))
    assert names(cluster.snapshot_objects(), "Node") == ["node-1", "node-2", "node-3"]


def test_watch_keeps_the_cache_current(server, cluster):
    cluster.start()
    server.store.create(PODS, pod("late", node="node-2"))
    server.store.delete(PODS, "team-a", "solo")
    assert cluster.wait_for(
        lambda objs: names(objs, "Pod") == ["high-0", "high-1", "late", "low-0", "low-1"], 5
    )
    assert cluster.resource_versions()["pods"] == str(server.store.resource_version)


def test_bookmarks_advance_the_resource_version_of_quiet_kinds(server, cluster):
    cluster.start()
    before = int(cluster.resource_versions()["nodes"])
    server.store.create(PODS, pod("other"))
    nodes = cluster.reflector(NODES)
    deadline = time.monotonic() + 5
    while int(nodes.resource_version) <= before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert nodes.bookmarks > 0 and int(nodes.resource_version) > before


def test_expired_watch_relists(server, cluster):
    heard = []
    cluster.add_listener(lambda type_, resource, obj: obj and heard.append((type_, obj["metadata"]["name"])))
    cluster.start()
    reflector = cluster.reflector(PODS)
    lists_before = reflector.lists
    # changes the cache has not seen, then the server forgets them and cuts the watch
    server.faults.fail("/api/v1/pods$", 500, method="GET", times=None)  # hold the reflector back
    server.drop_watches()
    server.store.delete(PODS, "team-a", "solo")
    server.store.create(PODS, pod("while-away"))
    server.expire_watch_window()
    server.faults.clear()
    assert cluster.wait_for(
        lambda objs: "while-away" in names(objs, "Pod") and "solo" not in names(objs, "Pod"), 10
    )
    assert reflector.expired >= 1 and reflector.lists > lists_before
    # listeners hear what the relist found, as if the watch had delivered it
    assert ("DELETED", "solo") in heard and ("ADDED", "while-away") in heard


def test_a_planning_process_indexes_in_the_background_only_once_every_kind_is_listed(server, cluster):
    """The first index settles the heap and takes its measure: on a half-listed cache that measure was a
    fraction of the whole, and the full collection it brought a minute later stalled every thread."""
    server.faults.fail("/api/v1/pods$", 500, method="GET", times=None)  # the pods' list held back
    cluster.start(wait=False, index=True)
    nodes = cluster.reflector(NODES)
    deadline = time.monotonic() + 10
    while not nodes.synced.is_set() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert nodes.synced.is_set() and not cluster.reflector(PODS).synced.is_set()
    assert not cluster.live.indexing()  # the cache so far is nodes without their pods
    server.faults.clear()
    deadline = time.monotonic() + 30
    while not cluster.live.ready() and time.monotonic() < deadline:
        time.sleep(0.05)
    live = cluster.live_snapshot()
    assert live.indexing() and live.ready()
    assert "team-a/solo" in {p.key for p in live.snapshot().pods}


def test_reconnects_after_the_server_restarts(server, cluster):
    cluster.start()
    reflector = cluster.reflector(PODS)
    server.restart()
    server.store.create(PODS, pod("after-restart"))
    assert cluster.wait_for(lambda objs: "after-restart" in names(objs, "Pod"), 60)
    assert reflector.failures + reflector.watches >= 2


def test_a_replaced_server_with_fresh_storage_is_listed_again(server, cluster):
    from kubetestserver import KubeTestServer

    from .objects import small_cluster

    for i in range(20):  # push the old server's resourceVersion well past the new one's
        server.store.create(PODS, pod(f"filler-{i}"))
    cluster.start()
    server.stop()
    with KubeTestServer(port=server.port, bookmark_interval=0.2) as replacement:
        replacement.load([o for o in small_cluster() if o["metadata"]["name"] != "solo"])
        assert cluster.wait_for(lambda objs: names(objs, "Pod") == ["high-0", "high-1", "low-0", "low-1"], 15)
        replacement.store.create(PODS, pod("on-the-new-server"))
        assert cluster.wait_for(lambda objs: "on-the-new-server" in names(objs, "Pod"), 10)


def test_fresh_snapshot_sees_writes_the_cache_may_not_have_yet(server, cluster):
    server.store.create(PODS, pod("brand-new"))
    assert "brand-new" in names(cluster.fresh_snapshot(), "Pod")


def test_get_pod(cluster):
    solo = cluster.get_pod("team-a", "solo")
    assert solo["kind"] == "Pod" and solo["apiVersion"] == "v1" and solo["spec"]["nodeName"] == "node-1"
    assert cluster.get_pod("team-a", "nope") is None


# ----- eviction


def test_eviction_ok_then_404_counts_as_done(server, cluster):
    result = cluster.evict("team-a", "solo")
    assert (result.code, result.ok, result.dry_run) == (201, True, False)
    assert server.store.try_get(PODS, "team-a", "solo") is None
    again = cluster.evict("team-a", "solo")
    assert again.code == 404 and again.ok and 'pods "solo" not found' in again.message


def test_dry_run_eviction_persists_nothing(server, cluster):
    result = cluster.evict("team-a", "low-0", dry_run=True)
    assert result.ok and result.dry_run
    assert server.store.try_get(PODS, "team-a", "low-0") is not None
    assert server.store.get(PDBS, "team-a", "low-pdb")["status"]["disruptionsAllowed"] == 1
    # the dry run reached the server as a dry run, in query and body
    (request,) = server.requests("/pods/low-0/eviction", "POST")
    assert "dryRun=All" in request["query"]


def test_pdb_blocks_the_second_eviction_with_429(server, cluster):
    assert cluster.evict("team-a", "low-0").ok
    blocked = cluster.evict("team-a", "low-1")
    assert (blocked.code, blocked.ok, blocked.retryable) == (429, False, True)
    assert "disruption budget" in blocked.message
    dry = cluster.evict("team-a", "low-1", dry_run=True)
    assert dry.code == 429, "a dry run must report what the real eviction would meet"


def test_dry_runs_check_a_budget_without_spending_it_real_evictions_spend(server, cluster):
    """Why a plan is held against budgets as a whole: two victims under a budget of one both pass."""
    assert [cluster.evict("team-a", p, dry_run=True).code for p in ("low-0", "low-1")] == [201, 201]
    assert server.store.get(PDBS, "team-a", "low-pdb")["status"]["disruptionsAllowed"] == 1
    assert [cluster.evict("team-a", p).code for p in ("low-0", "low-1")] == [201, 429]


def test_an_eviction_names_the_pod_by_uid_and_spares_a_replacement(server, cluster):
    server.store.recreate_deleted_pods = True  # a StatefulSet-like controller: same name, new UID
    planned = cluster.get_pod("team-a", "solo")["metadata"]["uid"]
    stale = cluster.evict("team-a", "solo", uid="not-" + planned, dry_run=True)
    assert stale.code == 409 and "UID" in stale.message
    assert cluster.evict("team-a", "solo", uid=planned).code == 201
    replacement = server.store.get(PODS, "team-a", "solo")
    assert replacement["metadata"]["uid"] != planned
    again = cluster.evict("team-a", "solo", uid=planned)  # a retry of the same plan
    assert again.code == 409 and not again.ok and "UID" in again.message
    assert server.store.get(PODS, "team-a", "solo")["metadata"]["uid"] == replacement["metadata"]["uid"]
    (first, second) = [
        r for r in server.requests("/pods/solo/eviction", "POST") if "dryRun" not in r["query"]
    ]
    assert (first["code"], second["code"]) == (201, 409)


def test_delete_pod_needs_the_uid_and_ignores_budgets(server, cluster):
    assert cluster.evict("team-a", "low-0").ok  # the budget is spent: another eviction would be a 429
    uid = cluster.get_pod("team-a", "low-1")["metadata"]["uid"]
    assert cluster.delete_pod("team-a", "low-1", uid="other", dry_run=True).code == 409
    assert cluster.delete_pod("team-a", "low-1", uid=uid, dry_run=True).code == 200
    assert server.store.try_get(PODS, "team-a", "low-1") is not None
    assert cluster.delete_pod("team-a", "low-1", uid="other").code == 409
    assert cluster.delete_pod("team-a", "low-1", uid=uid).code == 200
    assert server.store.try_get(PODS, "team-a", "low-1") is None
    assert cluster.delete_pod("team-a", "low-1", uid=uid).code == 404


def test_parallel_evictions_spend_a_budget_exactly_once_each(server, cluster):
    from concurrent.futures import ThreadPoolExecutor

    from .objects import pdb

    for i in range(10):
        server.store.create(PODS, pod(f"w-{i}", labels={"app": "wide"}))
    server.store.create(PDBS, pdb("wide-pdb", app="wide", min_available=7))
    server.refresh_pdbs()  # 10 healthy, 7 needed: 3 disruptions allowed
    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(lambda i: cluster.evict("team-a", f"w-{i}"), range(10)))
    assert sorted(r.code for r in results) == [201] * 3 + [429] * 7
    status = server.store.get(PDBS, "team-a", "wide-pdb")["status"]
    assert status["disruptionsAllowed"] == 0 and len(status["disruptedPods"]) == 3


def test_injected_500_is_retryable_and_the_retry_succeeds(server, cluster):
    server.faults.fail_eviction("team-a", "solo", 500, times=1)
    first = cluster.evict("team-a", "solo")
    assert (first.code, first.ok, first.retryable) == (500, False, True)
    assert cluster.evict("team-a", "solo").code == 201


def test_no_answer_in_time_is_a_retryable_504(server, kubeconfig):
    slow = KubeCluster.from_kubeconfig(kubeconfig, timeout=(1.0, 0.3))
    server.faults.fail_eviction("team-a", "solo", 0, delay=1.0)
    result = slow.evict("team-a", "solo")
    assert result.code == 504 and result.retryable and not result.ok
    slow.close()


def test_unreachable_server_is_a_retryable_503(server, kubeconfig):
    cluster = KubeCluster.from_kubeconfig(kubeconfig, timeout=(0.5, 0.5))
    server.stop()
    result = cluster.evict("team-a", "solo")
    assert result.code == 503 and result.retryable
    with pytest.raises(ClusterError) as err:
        cluster.fresh_snapshot()
    assert err.value.code == 0 and err.value.retryable
    cluster.close()


# ----- status writes and events


def test_mark_disruption_target_keeps_other_conditions(server, cluster):
    cluster.mark_disruption_target(
        "team-a", "low-0", "default-scheduler: preempting to accommodate a higher priority podgroup"
    )
    conditions = {c["type"]: c for c in server.store.get(PODS, "team-a", "low-0")["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    target = conditions["DisruptionTarget"]
    assert (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")
    assert target["lastTransitionTime"].endswith("Z")
    cluster.mark_disruption_target("team-a", "gone-already", "x")  # a pod already gone needs no mark


def test_mark_disruption_target_failure_raises_cluster_error(server, cluster):
    server.faults.fail("/pods/low-0/status$", 503, method="PATCH")
    with pytest.raises(ClusterError) as err:
        cluster.mark_disruption_target("team-a", "low-0", "x")
    assert err.value.code == 503 and err.value.retryable


def test_preempted_event_names_the_victim_and_the_preemptor(server, cluster):
    cluster.start()
    cluster.record_event(
        ClusterEvent(
            namespace="team-a",
            involved_kind="Pod",
            involved_name="low-0",
            reason="Preempted",
            message="Preempted by podgroup high-gang on node cluster",
            related_kind="PodGroup",
            related_name="high-gang",
        )
    )
    (event,) = server.store.list(EVENTS_V1, "team-a")
    victim = server.store.get(PODS, "team-a", "low-0")
    preemptor = server.store.get(PODGROUPS, "team-a", "high-gang")
    assert event["reason"] == "Preempted" and event["action"] == "Preempting" and event["type"] == "Normal"
    assert event["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "team-a",
        "name": "low-0",
        "uid": victim["metadata"]["uid"],
    }
    assert event["related"] == {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "namespace": "team-a",
        "name": "high-gang",
        "uid": preemptor["metadata"]["uid"],
    }
    assert event["reportingController"] == "gangweb.io/preemption" and event["note"].startswith(
        "Preempted by podgroup"
    )


def test_list_events_of_one_reason(server, cluster):
    for reason in ("Preempted", "Scheduled"):
        cluster.record_event(
            ClusterEvent(
                namespace="team-a",
                involved_kind="Pod",
                involved_name="low-0",
                reason=reason,
                message=f"{reason} by test",
            )
        )
    preempted = cluster.list_events(reason="Preempted")
    assert [(e["kind"], e["apiVersion"], e["reason"], e["regarding"]["name"]) for e in preempted] == [
        ("Event", "events.k8s.io/v1", "Preempted", "low-0")
    ]
    assert len(cluster.list_events(namespace="team-a")) == 2


def test_events_can_be_watched_too(server, kubeconfig):
    from scheduler.kube.resources import SNAPSHOT_RESOURCES

    with KubeCluster.from_kubeconfig(kubeconfig, resources=SNAPSHOT_RESOURCES + (EVENTS_V1,)) as watching:
        watching.record_event(
            ClusterEvent(
                namespace="team-a",
                involved_kind="Pod",
                involved_name="low-0",
                reason="Preempted",
                message="by kube-scheduler",
            )
        )
        assert watching.wait_for(
            lambda objs: [e["reason"] for e in of_kind(objs, "Event")] == ["Preempted"], 5
        )


def test_podgroup_condition_moves_its_transition_time_only_on_change(server, cluster):
    cluster.set_podgroup_condition(
        "team-a",
        "high-gang",
        "PodGroupInitiallyScheduled",
        "False",
        "Unschedulable",
        "waiting for preemption",
    )
    first = server.store.get(PODGROUPS, "team-a", "high-gang")["status"]["conditions"][0]
    server.store.mutate(
        PODGROUPS,
        "team-a",
        "high-gang",
        lambda o: o["status"]["conditions"][0].update(lastTransitionTime="2020-01-01T00:00:00Z"),
        subresource="status",
    )
    cluster.set_podgroup_condition(
        "team-a", "high-gang", "PodGroupInitiallyScheduled", "False", "Unschedulable", "still waiting"
    )
    second = server.store.get(PODGROUPS, "team-a", "high-gang")["status"]["conditions"][0]
    assert second["message"] == "still waiting" and second["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    cluster.set_podgroup_condition(
        "team-a", "high-gang", "PodGroupInitiallyScheduled", "True", "Scheduled", "placed"
    )
    third = server.store.get(PODGROUPS, "team-a", "high-gang")["status"]["conditions"][0]
    assert third["status"] == "True" and third["lastTransitionTime"] != "2020-01-01T00:00:00Z"
    assert first["reason"] == "Unschedulable"
    cluster.set_podgroup_condition("team-a", "no-such-group", "PodGroupInitiallyScheduled", "True", "x", "y")


def test_podgroup_condition_retries_a_conflict(server, cluster):
    server.faults.fail("/podgroups/high-gang/status$", 409, method="PATCH", times=1)
    cluster.set_podgroup_condition(
        "team-a", "high-gang", "PodGroupInitiallyScheduled", "False", "Unschedulable", "waiting"
    )
    assert (
        server.store.get(PODGROUPS, "team-a", "high-gang")["status"]["conditions"][0]["reason"]
        == "Unschedulable"
    )
    assert [r["code"] for r in server.requests("/podgroups/high-gang/status", "PATCH")] == [409, 200]


def test_a_failing_listener_does_not_stall_the_informer(server, cluster):
    def broken(type_, resource, obj):
        raise RuntimeError("listener bug")

    cluster.add_listener(broken)
    cluster.start()
    server.store.create(PODS, pod("late"))
    assert cluster.wait_for(lambda objs: "late" in names(objs, "Pod"), 5)
    assert cluster.reflector(PODS).failures == 0


def test_start_gives_up_with_a_clear_error_and_stops(server, cluster):
    server.faults.fail("/api/v1/nodes$", 503, method="GET", times=None)
    with pytest.raises(ClusterError, match="informers not synced") as err:
        cluster.start(timeout=1)
    assert "nodes" in str(err.value)
    assert not any(cluster.reflector(r)._thread for r in cluster.resources)


def test_a_forked_child_talks_through_its_own_connections(server, cluster):
    import multiprocessing

    assert cluster.get_pod("team-a", "solo")  # the parent's pool now holds a connection
    parent_client = cluster.api_client
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    child = ctx.Process(
        target=lambda: results.put(
            (cluster.evict("team-a", "solo").code, cluster.api_client is parent_client)
        )
    )
    child.start()
    code, shared = results.get(timeout=20)
    child.join(10)
    assert code == 201 and not shared
    assert cluster.api_client is parent_client and cluster.get_pod("team-a", "solo") is None


def test_bad_kubeconfig_is_a_clear_error(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(ClusterError, match="cannot load kubeconfig"):
        KubeCluster.from_kubeconfig(missing)


def test_in_cluster_outside_a_cluster_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ClusterError, match="not running in a cluster"):
        KubeCluster.in_cluster()


def test_from_environment_follows_kubeconfig(server, kubeconfig, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")  # KUBECONFIG wins, as the runtime expects
    cluster = KubeCluster.from_environment()
    assert cluster.get_pod("team-a", "solo")["metadata"]["name"] == "solo"
    cluster.close()


def test_watches_that_end_at_once_back_off_instead_of_spinning(server, kubeconfig):
    # timeoutSeconds=0: the server ends every watch immediately, with no event in it
    started = time.monotonic()
    quick = KubeCluster.from_kubeconfig(kubeconfig, watch_timeout=0).start()
    try:
        deadline = started + 60
        while quick.reflector(PODS).watches < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        took = time.monotonic() - started
        assert quick.reflector(PODS).watches >= 4
    finally:
        quick.close()
    # Waits of 0.2, 0.4 and 0.8 s lie between the first watch and the fourth; a spinning loop takes ms.
    assert took >= 1.4, f"4 empty watches in {took:.2f} s"
