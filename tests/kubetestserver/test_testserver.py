"""The test server answers the official client the way a real API server does."""

from __future__ import annotations

import json
import threading
import time

import kubernetes_validate.utils
import pytest
import yaml
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from kubetestserver import ControlClient, TestServerProcess
from scheduler.kube.resources import EVENTS, PDBS, PODGROUPS, PODS
from tests.scheduler.kube.objects import pdb, pod, podgroup, small_cluster


def status_body(exc: ApiException) -> dict:
    body = json.loads(exc.body)
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == exc.status
    return body


# ----- CRUD and typed parsing


def test_typed_client_parses_every_served_kind(api):
    pods = client.CoreV1Api(api).list_pod_for_all_namespaces()
    assert {p.metadata.name for p in pods.items} == {"low-0", "low-1", "solo", "high-0", "high-1"}
    assert pods.items[0].metadata.uid and int(pods.metadata.resource_version) > 0
    group = client.SchedulingV1beta1Api(api).read_namespaced_pod_group("low-gang", "team-a")
    assert group.spec.scheduling_policy.gang.min_count == 2
    budget = client.PolicyV1Api(api).read_namespaced_pod_disruption_budget("low-pdb", "team-a")
    # the server computed the status the disruption controller would: 2 healthy, 1 needed
    assert (
        budget.status.current_healthy,
        budget.status.desired_healthy,
        budget.status.disruptions_allowed,
    ) == (2, 1, 1)
    classes = client.SchedulingV1Api(api).list_priority_class()
    assert {c.metadata.name: c.value for c in classes.items} == {"batch-low": 100, "train-high": 1000}
    assert client.CoreV1Api(api).read_node("node-2").status.capacity["nvidia.com/gpu"] == "8"


def test_served_objects_validate_against_the_1_37_schemas(server, api):
    raw = client.CoreV1Api(api).read_namespaced_pod("low-0", "team-a", _preload_content=False)
    obj = json.loads(raw.data)
    kubernetes_validate.utils.validate(obj, "1.37.0", strict=True)
    assert obj["apiVersion"] == "v1" and obj["kind"] == "Pod"


def test_list_items_carry_no_type_fields_like_a_real_server(core):
    page = json.loads(core.list_namespaced_pod("team-a", _preload_content=False).data)
    assert page["kind"] == "PodList" and page["apiVersion"] == "v1"
    assert all("kind" not in item and "apiVersion" not in item for item in page["items"])


def test_create_twice_is_409_already_exists(core):
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("team-a", pod("solo"))
    assert err.value.status == 409 and status_body(err.value)["reason"] == "AlreadyExists"


def test_missing_object_is_404_with_status_body(core):
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("nope", "team-a")
    body = status_body(err.value)
    assert err.value.status == 404 and body["reason"] == "NotFound" and body["details"]["name"] == "nope"


def test_patch_with_stale_resource_version_is_409_conflict(core):
    current = core.read_namespaced_pod("solo", "team-a")
    core.patch_namespaced_pod("solo", "team-a", {"metadata": {"labels": {"touched": "1"}}})
    stale = {"metadata": {"resourceVersion": current.metadata.resource_version, "labels": {"x": "y"}}}
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod("solo", "team-a", stale)
    assert err.value.status == 409 and status_body(err.value)["reason"] == "Conflict"
    fresh = core.read_namespaced_pod("solo", "team-a")
    assert fresh.metadata.labels == {"app": "solo", "touched": "1"}


def test_status_goes_through_the_status_subresource_only(core):
    core.patch_namespaced_pod("solo", "team-a", {"status": {"phase": "Failed"}})
    assert core.read_namespaced_pod("solo", "team-a").status.phase == "Running"
    core.patch_namespaced_pod_status(
        "solo",
        "team-a",
        {
            "status": {
                "conditions": [
                    {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
                ]
            }
        },
    )
    conditions = {c.type: c.status for c in core.read_namespaced_pod("solo", "team-a").status.conditions}
    # strategic merge: conditions merge by type, the Ready condition stays
    assert conditions == {"Ready": "True", "DisruptionTarget": "True"}


def test_merge_patch_replaces_lists(core):
    core.patch_namespaced_pod_status(
        "solo",
        "team-a",
        {"status": {"conditions": [{"type": "X", "status": "True"}]}},
        _content_type="application/merge-patch+json",
    )
    assert [c.type for c in core.read_namespaced_pod("solo", "team-a").status.conditions] == ["X"]


def test_json_patch_and_generation(api):
    groups = client.SchedulingV1beta1Api(api)
    before = groups.read_namespaced_pod_group("low-gang", "team-a")
    after = groups.patch_namespaced_pod_group(
        "low-gang", "team-a", [{"op": "replace", "path": "/spec/schedulingPolicy/gang/minCount", "value": 1}]
    )
    assert after.spec.scheduling_policy.gang.min_count == 1
    assert after.metadata.generation == before.metadata.generation + 1


def test_pagination_with_limit_and_continue(core):
    first = core.list_pod_for_all_namespaces(limit=2)
    assert len(first.items) == 2 and first.metadata.var_continue and first.metadata.remaining_item_count == 3
    names = [p.metadata.name for p in first.items]
    token = first.metadata.var_continue
    while token:
        page = core.list_pod_for_all_namespaces(limit=2, _continue=token)
        names += [p.metadata.name for p in page.items]
        token = page.metadata.var_continue
    assert sorted(names) == ["high-0", "high-1", "low-0", "low-1", "solo"]


def test_label_and_field_selectors(core):
    assert [p.metadata.name for p in core.list_namespaced_pod("team-a", label_selector="app=low").items] == [
        "low-0",
        "low-1",
    ]
    on_two = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=node-2")
    assert [p.metadata.name for p in on_two.items] == ["low-1"]


def test_delete_returns_the_pod_and_404_after(core):
    deleted = core.delete_namespaced_pod("solo", "team-a")
    assert deleted.metadata.name == "solo"
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_pod("solo", "team-a")
    assert err.value.status == 404


def test_events_created_in_one_group_are_listed_in_the_other(api):
    client.EventsV1Api(api).create_namespaced_event(
        "team-a",
        {
            "metadata": {"name": "solo.1"},
            "eventTime": "2026-11-30T10:00:00.000000Z",
            "reason": "Preempted",
            "action": "Preempting",
            "note": "Preempted by podgroup u1 on node cluster",
            "type": "Normal",
            "reportingController": "gangweb",
            "reportingInstance": "gangweb-0",
            "regarding": {"kind": "Pod", "namespace": "team-a", "name": "solo"},
        },
    )
    core_events = client.CoreV1Api(api).list_namespaced_event("team-a").items
    assert [(e.reason, e.involved_object.name, e.message) for e in core_events] == [
        ("Preempted", "solo", "Preempted by podgroup u1 on node cluster")
    ]


@pytest.mark.parametrize(
    "path, body",
    [
        ("/api/v1/namespaces/team-a/pods", [1, 2]),
        ("/api/v1/namespaces/team-a/pods/solo/eviction", {"kind": "Pod"}),
        ("/api/v1/namespaces/team-a/pods/solo/eviction", {"kind": "Eviction", "metadata": {"name": "other"}}),
    ],
)
def test_malformed_bodies_get_400_not_500(server, path, body):
    import urllib3

    answer = urllib3.request("POST", server.url + path, json=body)
    assert answer.status == 400 and answer.json()["reason"] == "BadRequest"


def test_non_json_body_gets_400(server):
    import urllib3

    answer = urllib3.request(
        "POST",
        server.url + "/api/v1/namespaces/team-a/pods",
        body=b"{nope",
        headers={"Content-Type": "application/json"},
    )
    assert answer.status == 400 and "not valid JSON" in answer.json()["message"]


def test_discovery_lists_the_served_groups(api):
    groups = client.ApisApi(api).get_api_versions()
    names = {g.name for g in groups.groups}
    assert {"scheduling.k8s.io", "policy", "events.k8s.io"} <= names
    resources = client.SchedulingV1beta1Api(api).get_api_resources()
    assert {"podgroups", "podgroups/status", "workloads"} <= {r.name for r in resources.resources}


# ----- eviction


def evict(core, name, namespace="team-a"):
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=namespace))
    return core.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False)


def test_eviction_spends_the_budget_then_answers_429(server, core):
    assert evict(core, "low-0").status == 201
    budget = server.store.get(PDBS, "team-a", "low-pdb")["status"]
    assert budget["disruptionsAllowed"] == 0 and "low-0" in budget["disruptedPods"]
    assert server.store.try_get(PODS, "team-a", "low-0") is None
    with pytest.raises(ApiException) as err:
        evict(core, "low-1")
    body = status_body(err.value)
    assert err.value.status == 429 and body["reason"] == "TooManyRequests"
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert server.store.try_get(PODS, "team-a", "low-1") is not None


@pytest.mark.parametrize("how", ["query", "body"])
def test_dry_run_eviction_changes_nothing(server, core, how):
    rv = server.store.resource_version
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name="low-0", namespace="team-a"))
    if how == "body":
        body.delete_options = client.V1DeleteOptions(dry_run=["All"])
        answer = core.create_namespaced_pod_eviction("low-0", "team-a", body, _preload_content=False)
    else:
        answer = core.create_namespaced_pod_eviction(
            "low-0", "team-a", body, dry_run="All", _preload_content=False
        )
    assert answer.status == 201
    assert server.store.resource_version == rv
    assert server.store.get(PDBS, "team-a", "low-pdb")["status"]["disruptionsAllowed"] == 1


def test_a_budget_not_yet_processed_answers_429(server, core):
    server.store.patch(
        PDBS, "team-a", "low-pdb", "application/merge-patch+json", {"spec": {"minAvailable": 0}}
    )
    with pytest.raises(ApiException) as err:
        evict(core, "low-0")
    assert err.value.status == 429 and "still being processed" in err.value.body
    assert err.value.headers["Retry-After"] == "10"
    server.refresh_pdbs()
    assert evict(core, "low-0").status == 201


@pytest.mark.parametrize(
    ("spec", "computed"),
    [({"maxUnavailable": 1}, False), ({"minAvailable": "50%"}, False), ({"minAvailable": 1}, True)],
)
def test_a_budget_over_a_jobs_pods_needs_an_integer_min_available(server, core, spec, computed):
    # The real disruption controller reads the expected pod count of maxUnavailable and of a percentage from
    # the pods' controller's scale subresource; a Job has none: SyncFailed, nothing allowed, 429 on eviction.
    job = {"apiVersion": "batch/v1", "kind": "Job", "name": "low", "uid": "job-uid", "controller": True}
    for name in ("low-0", "low-1"):
        server.store.patch(
            PODS, "team-a", name, "application/merge-patch+json", {"metadata": {"ownerReferences": [job]}}
        )
    server.store.delete(PDBS, "team-a", "low-pdb")
    server.store.create(
        PDBS, {**pdb("low-pdb", app="low"), "spec": {**spec, "selector": {"matchLabels": {"app": "low"}}}}
    )
    server.refresh_pdbs()
    status = server.store.get(PDBS, "team-a", "low-pdb")["status"]
    if computed:
        assert (status["expectedPods"], status["disruptionsAllowed"]) == (2, 1)
        assert evict(core, "low-0").status == 201
        return
    assert status["disruptionsAllowed"] == 0 and status["expectedPods"] == 0, status
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed",
        "False",
        "SyncFailed",
    )
    assert condition["message"] == "jobs.batch does not implement the scale subresource"
    with pytest.raises(ApiException) as err:
        evict(core, "low-0")
    assert err.value.status == 429


def test_max_unavailable_over_pods_without_a_controller_allows_nothing(server, core):
    # The real controller expects no pod that has no controller (an UnmanagedPods warning): expectedPods 0,
    # and so no disruption, however many of them are healthy.
    server.store.delete(PDBS, "team-a", "low-pdb")
    budget = pdb("low-pdb", app="low")
    budget["spec"] = {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "low"}}}
    server.store.create(PDBS, budget)
    server.refresh_pdbs()
    status = server.store.get(PDBS, "team-a", "low-pdb")["status"]
    assert (status["expectedPods"], status["currentHealthy"], status["disruptionsAllowed"]) == (0, 2, 0), (
        status
    )
    with pytest.raises(ApiException) as err:
        evict(core, "low-0")
    assert err.value.status == 429


def test_pending_pods_are_evicted_without_a_budget(server, core):
    server.store.create(PDBS, pdb("high-pdb", app="high", min_available=5))
    server.store.patch(
        PODS, "team-a", "high-0", "application/merge-patch+json", {"metadata": {"labels": {"app": "high"}}}
    )
    assert evict(core, "high-0").status == 201


def test_graceful_eviction_leaves_the_pod_terminating(server, core):
    server.store.graceful_pod_deletion = True
    assert evict(core, "solo").status == 201
    terminating = server.store.get(PODS, "team-a", "solo")
    assert terminating["metadata"]["deletionTimestamp"]
    # like the API server, the eviction itself marks the pod
    assert {
        (c["type"], c["reason"]) for c in terminating["status"]["conditions"] if c["type"] != "Ready"
    } == {("DisruptionTarget", "EvictionByEvictionAPI")}
    assert server.store.finish_terminating() == 1
    assert server.store.try_get(PODS, "team-a", "solo") is None


def test_a_write_naming_another_uid_is_refused_as_the_real_server_refuses_it(server, core):
    """The UID is immutable: a status patch naming another one is 422 (tests/realcluster/test_control_plane.py
    asks the real server the same), one naming the pod's own goes through."""
    uid = server.store.get(PODS, "team-a", "solo")["metadata"]["uid"]
    mark = {"status": {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "Test"}]}}
    with pytest.raises(ApiException) as refused:
        core.patch_namespaced_pod_status("solo", "team-a", {"metadata": {"uid": "another"}, **mark})
    assert refused.value.status == 422 and "metadata.uid" in status_body(refused.value)["message"]
    assert "DisruptionTarget" not in {
        c["type"] for c in server.store.get(PODS, "team-a", "solo")["status"].get("conditions") or []
    }
    core.patch_namespaced_pod_status("solo", "team-a", {"metadata": {"uid": uid}, **mark})
    conditions = server.store.get(PODS, "team-a", "solo")["status"]["conditions"]
    assert ("DisruptionTarget", "Test") in {(c["type"], c.get("reason")) for c in conditions}


def test_status_writes_on_a_terminating_pod_keep_it(server, core):
    server.store.graceful_pod_deletion = True
    core.delete_namespaced_pod("solo", "team-a")
    core.patch_namespaced_pod_status(
        "solo", "team-a", {"status": {"conditions": [{"type": "DisruptionTarget", "status": "True"}]}}
    )
    assert server.store.get(PODS, "team-a", "solo")["metadata"]["deletionTimestamp"]
    core.delete_namespaced_pod("solo", "team-a", grace_period_seconds=0)
    assert server.store.try_get(PODS, "team-a", "solo") is None


def test_removing_the_last_finalizer_finishes_a_deletion(server, core):
    core.patch_namespaced_pod("solo", "team-a", {"metadata": {"finalizers": ["example.com/hold"]}})
    core.delete_namespaced_pod("solo", "team-a")
    assert server.store.get(PODS, "team-a", "solo")["metadata"]["deletionTimestamp"]
    core.patch_namespaced_pod("solo", "team-a", [{"op": "remove", "path": "/metadata/finalizers"}])
    assert server.store.try_get(PODS, "team-a", "solo") is None


def test_injected_eviction_faults_answer_then_clear(server, core):
    server.faults.fail_eviction("team-a", "solo", 500, times=2)
    for _ in range(2):
        with pytest.raises(ApiException) as err:
            evict(core, "solo")
        assert err.value.status == 500 and status_body(err.value)["reason"] == "InternalError"
    assert evict(core, "solo").status == 201
    codes = [r["code"] for r in server.requests("/pods/solo/eviction", "POST")]
    assert codes == [500, 500, 201]


# ----- watch


def test_watch_streams_changes_from_a_resource_version_with_bookmarks(server, core):
    start = core.list_namespaced_pod("team-a").metadata.resource_version
    server.store.patch(
        PODS, "team-a", "solo", "application/merge-patch+json", {"metadata": {"labels": {"n": "1"}}}
    )
    server.store.delete(PODS, "team-a", "high-1")
    seen = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod,
        "team-a",
        resource_version=start,
        allow_watch_bookmarks=True,
        timeout_seconds=1,
    ):
        seen.append((event["type"], event["raw_object"]["metadata"].get("name")))
    assert seen[:2] == [("MODIFIED", "solo"), ("DELETED", "high-1")]
    assert ("BOOKMARK", None) in seen[2:]  # the server sends bookmarks every 0.2 s here
    assert isinstance(watch.Watch().get_return_type(core.list_namespaced_pod)(), client.V1Pod)


def test_selector_watches_see_objects_enter_and_leave_the_selection(server, core):
    start = core.list_namespaced_pod("team-a").metadata.resource_version

    def relabel(name, labels):
        server.store.patch(
            PODS, "team-a", name, "application/merge-patch+json", {"metadata": {"labels": labels}}
        )

    relabel("low-1", {"app": "other"})
    relabel("solo", {"app": "low"})
    relabel("low-0", {"n": "1"})
    seen = [
        (e["type"], e["raw_object"]["metadata"]["name"])
        for e in watch.Watch().stream(
            core.list_namespaced_pod,
            "team-a",
            label_selector="app=low",
            resource_version=start,
            timeout_seconds=1,
        )
    ]
    assert seen == [("DELETED", "low-1"), ("ADDED", "solo"), ("MODIFIED", "low-0")]


def test_watch_without_resource_version_starts_with_the_current_objects(core):
    seen = [
        e["raw_object"]["metadata"]["name"]
        for e in watch.Watch().stream(core.list_namespaced_pod, "team-a", timeout_seconds=1)
    ]
    assert sorted(seen) == ["high-0", "high-1", "low-0", "low-1", "solo"]


def test_watch_from_an_expired_resource_version_gets_410(server, core):
    start = core.list_namespaced_pod("team-a").metadata.resource_version
    server.store.delete(PODS, "team-a", "solo")
    server.expire_watch_window()
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(
            core.list_namespaced_pod, "team-a", resource_version=start, timeout_seconds=2
        ):
            pass
    assert err.value.status == 410


def test_timeout_seconds_ends_the_stream(core):
    started = time.monotonic()
    list(watch.Watch().stream(core.list_node, resource_version="1", timeout_seconds=1))
    assert 0.9 <= time.monotonic() - started < 5


def test_dropped_watch_ends_abruptly(server, core):
    start = core.list_node().metadata.resource_version
    errors: list[Exception] = []

    def consume() -> None:
        try:
            for _ in watch.Watch().stream(core.list_node, resource_version=start, timeout_seconds=20):
                pass
        except Exception as exc:
            errors.append(exc)

    thread = threading.Thread(target=consume)
    thread.start()
    deadline = time.monotonic() + 15
    while thread.is_alive() and time.monotonic() < deadline:  # a drop before the stream opened cuts nothing
        server.drop_watches()
        thread.join(0.2)
    assert not thread.is_alive() and errors, "a dropped watch must end the client's stream with an error"


# ----- another process


def test_cli_server_in_a_child_process(tmp_path):
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(small_cluster() + [{"apiVersion": "v9", "kind": "Unknown"}]))
    with TestServerProcess(tmp_path / "kc.yaml", load=snapshot) as proc:
        from kubernetes import config

        api = config.new_client_from_config(config_file=str(proc.kubeconfig))
        core = client.CoreV1Api(api)
        assert len(core.list_pod_for_all_namespaces().items) == 5
        control = proc.control
        control.fail_eviction("team-a", "solo", 429, times=1)
        with pytest.raises(ApiException) as err:
            evict(core, "solo")
        assert err.value.status == 429
        assert evict(core, "solo").status == 201
        assert [r["code"] for r in control.requests("/eviction")] == [429, 201]
        assert control.load([podgroup("late")]) == 1
        assert any(o["metadata"]["name"] == "late" for o in control.dump())
        api.close()


def test_cli_rejects_a_bad_snapshot(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\nmetadata: [oops\n")
    with pytest.raises(RuntimeError, match="cannot load snapshot"):
        TestServerProcess(tmp_path / "kc.yaml", load=bad).start()


def test_control_client_reports_unknown_actions(server):
    with pytest.raises(RuntimeError, match="unknown control action"):
        ControlClient(server.url)._call("POST", "explode", {})


def test_sync_publishes_only_the_differences(server, core):
    start = core.list_namespaced_pod("team-a").metadata.resource_version
    objects = server.store.dump()
    objects = [o for o in objects if o["metadata"]["name"] != "solo"]  # gone
    low0 = next(o for o in objects if o["metadata"]["name"] == "low-0")
    low0["status"]["phase"] = "Failed"  # changed
    objects.append(pod("fresh"))  # new
    assert server.store.sync(objects) == {"ADDED": 1, "MODIFIED": 1, "DELETED": 1}
    seen = [
        (e["type"], e["raw_object"]["metadata"]["name"])
        for e in watch.Watch().stream(
            core.list_namespaced_pod, "team-a", resource_version=start, timeout_seconds=1
        )
    ]
    assert sorted(seen) == [("ADDED", "fresh"), ("DELETED", "solo"), ("MODIFIED", "low-0")]
    assert server.store.sync(objects) == {"ADDED": 0, "MODIFIED": 0, "DELETED": 0}


def test_schema_validation_refuses_invalid_objects_with_422(server):
    import urllib3

    broken = pod("broken")  # raw HTTP: the typed client would refuse to send this
    broken["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = {"not": "a quantity"}
    answer = urllib3.request("POST", server.url + "/api/v1/namespaces/team-a/pods", json=broken)
    assert answer.status == 422 and answer.json()["reason"] == "Invalid"
    assert 'Pod "broken" is invalid' in answer.json()["message"]
    assert server.store.try_get(PODS, "team-a", "broken") is None


def test_store_is_usable_without_http(server):
    store = server.store
    created = store.create(PODGROUPS, podgroup("direct"))
    assert created["metadata"]["resourceVersion"] == str(store.resource_version)
    changes, _ = store.changes_since(PODGROUPS.storage_key, int(created["metadata"]["resourceVersion"]) - 1)
    assert [c.type for c in changes] == ["ADDED"]
    assert store.list(EVENTS) == []
