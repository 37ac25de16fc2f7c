"""RBAC from the code: each process's real code paths run against the Kubernetes API test server, its
request log is mapped to (apiGroup, resource, verb), and the rules bound to that process's ServiceAccount
in the rendered deploy/ must allow every call and grant nothing else (but the PENDING calls below); the
real API server's authorizer (`kubectl auth can-i --as=<the ServiceAccount>` against hack/cluster's
kube-apiserver, with deploy/ applied) must agree.

Scenarios per process (ServiceAccount gangweb-<process>):
- webhook: the PodGroup list + watch `webhook serve` runs (admission.runtime.podgroup_watch);
- web: the dashboard's cluster picture (gangweb.dashboard.live.read_picture), the what-if plan
  (POST /api/plan/), through the Cluster that scheduler.preemption.runtime builds from the environment, and
  an API request with a Kubernetes token (TokenReview, RoleBindings, SubjectAccessReview);
- worker: detection in enforce and observe mode (kube-scheduler's Preempted events), planning, the executor
  (evictions with their dry runs, DisruptionTarget marks, the ledger's Events and their series, the PodGroup condition; a unit finished by
  deletion when its budget was spent mid-plan; GANGWEB_PDB_POLICY=delete), and the PodGroup ensurer over every
  gang-source fixture (owner reads, PodGroup creation);
- beat: no API call at all (no role, no token).
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from kubernetes import client as kube_client
from kubernetes import config as kube_config

from admission.runtime import podgroup_watch
from admission.sources import SOURCES
from admission.state import PodGroupCache
from admission.tasks import ensure_podgroups
from gangweb.access import kube
from gangweb.access.grants import grant
from gangweb.access.scope import scope_for
from kubetestserver import KubeTestServer, discovery
from kubetestserver.httpapi import parse_route
from kubetestserver.reviews import mint_token
from scheduler.engine.reading import read_snapshot
from scheduler.preemption import execution as execution_module
from scheduler.preemption import kubeevents, ledger, planning, runtime
from scheduler.preemption.execution import NOTICE, execute
from scheduler.preemption.execution.budgets import shortfalls
from scheduler.preemption.models import PreemptionRequest, RequestState
from scheduler.preemption.tasks import detect_unschedulable_gangs
from tests.admission.ensurer.test_end_to_end import GANG_FIXTURES, create_owner, through_the_webhook
from tests.admission.support import EXPECTED, load_owner, load_pod
from tests.conftest import ROOT
from tests.deploy.rendering import NAMESPACE, PROCESSES, base_objects, granted, rules_of
from tests.gangweb.access.test_kubernetes import READ_PODGROUPS, binding, cluster_role, drf_request
from tests.scheduler.preemption.builders import node, pod, podgroup, small_cluster
from tests.scheduler.preemption.test_budgets import FAST, budgeted_cluster, plan_for
from tests.scheduler.preemption.test_observe_kube import kube_scheduler_preempted

pytestmark = pytest.mark.django_db(transaction=True)

Call = tuple[str, str, str]  # (apiGroup, resource, verb)

# Calls that work in progress adds, granted in deploy/base/rbac.yaml ahead of its code. When that code lands,
# add its call path to the process's scenario below and delete its lines here: the test fails while a
# line here is exercised already (the table must say what is really pending). Nothing is pending now.
PENDING: dict[str, dict[Call, str]] = {"web": {}, "worker": {}, "webhook": {}, "beat": {}}


# The review APIs are create-only virtual resources, not stored objects (kubetestserver/reviews.py).
REVIEWS = {
    "/apis/authentication.k8s.io/v1/tokenreviews": ("authentication.k8s.io", "tokenreviews", "create"),
    "/apis/authorization.k8s.io/v1/subjectaccessreviews": (
        "authorization.k8s.io",
        "subjectaccessreviews",
        "create",
    ),
}


# Non-resource reads: discovery, which the system:discovery role grants every authenticated user, and
# kube-apiserver's own /metrics, which deploy/ does not grant (its feature gates are then unknown:
# scheduler/kube/discovery.py).
UNGRANTED_READS = re.compile(r"^/(api|api/v1|apis(/[^/]+){0,2}|version|metrics)$")


def needed_permission(request: dict) -> Call | None:
    if request["method"] == "POST" and request["path"] in REVIEWS:
        return REVIEWS[request["path"]]
    if request["method"] == "GET" and UNGRANTED_READS.match(request["path"]):
        return None
    route = parse_route(request["path"])
    assert route is not None, request
    resource = route.resource.plural + (f"/{route.subresource}" if route.subresource else "")
    method, query = request["method"], parse_qs(request["query"] or "")
    if method == "GET":
        verb = "get" if route.name else ("watch" if query.get("watch") in (["true"], ["1"]) else "list")
    else:
        verb = {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}[method]
    return route.resource.group, resource, verb


def calls(server: KubeTestServer, since: int = 0) -> set[Call]:
    """The permissions the requests since ``since`` need; discovery (``/apis/GROUP/VERSION``, how the adapter
    finds the kinds a cluster serves) needs none: every authenticated identity may read it."""
    return {
        call
        for r in server.requests()[since:]
        if (discovery.handle(r["path"], "") is None or r["method"] != "GET")
        and (call := needed_permission(r)) is not None
    }


@pytest.fixture
def environment(monkeypatch, settings, tmp_path):
    """Point the process's own Cluster construction (runtime.get_cluster, podgroup_watch) at a server."""

    def use(server: KubeTestServer) -> None:
        monkeypatch.setenv("KUBECONFIG", str(server.write_kubeconfig(tmp_path / f"kubeconfig-{id(server)}")))
        settings.GANGWEB_CLUSTER = "kube"
        runtime.reset_cluster()

    yield use
    runtime.reset_cluster()


def webhook_calls(environment) -> set[Call]:
    with KubeTestServer() as server:
        server.load(small_cluster())
        environment(server)
        cache = PodGroupCache()
        watch = podgroup_watch(cache)
        watch.start()
        try:
            assert cache.wait_synced(timeout=30), "the webhook's PodGroup watch never synced"
            assert _eventually(
                lambda: any((needed_permission(r) or ("", "", ""))[2] == "watch" for r in server.requests())
            )
        finally:
            watch.stop()
        return calls(server)


def _eventually(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def web_calls(environment) -> set[Call]:
    from gangweb.dashboard.live import read_picture

    with KubeTestServer() as server:
        server.load(small_cluster())
        environment(server)
        picture = read_picture()
        assert picture.get("nodes") and not picture.get("note"), picture
        browser = Client()
        grant("platform", "viewer", all_namespaces=True)
        browser.force_login(User.objects.get(username="platform"))
        answer = browser.post("/api/plan/", {"podGroup": "team-a/train"}, content_type="application/json")
        assert answer.status_code == 200, answer.content
        # A platform tool with a Kubernetes token (gangweb/access/kube.py): TokenReview, the RoleBindings that
        # name it, SubjectAccessReviews.
        kube.clear_caches()
        ci_token = mint_token("ci")
        server.add_token(ci_token, "system:serviceaccount:team-a:ci", groups=["system:serviceaccounts"])
        server.load(
            [
                cluster_role("gangweb-viewer", READ_PODGROUPS),
                binding(
                    "team-a",
                    "gangweb-viewer",
                    {"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"},
                ),
            ]
        )
        answer = Client().get("/api/requests/", HTTP_AUTHORIZATION=f"Bearer {ci_token}")
        assert answer.status_code == 200, answer.content
        assert scope_for(drf_request(ci_token)).namespaces() == {"team-a"}  # what a list is cut to
        kube.clear_caches()
        return calls(server)


UPSTREAM = ROOT / "tests" / "fixtures" / "upstream"


def single_pods() -> list[dict]:
    """A 2x8 gang whose room two pods of a ``single`` PodGroup hold: each pod is a victim unit of its own."""
    objects = [node(f"node-{i}") for i in range(2)]
    objects += [podgroup("batch", "mid", min_count=1, priority=20, disruption="single")]
    objects += [pod("batch", f"mid-{i}", group="mid", priority=20, node_name=f"node-{i}") for i in range(2)]
    objects += [podgroup("team-a", "train", min_count=2, priority=100, unschedulable=True)]
    return objects + [pod("team-a", f"train-{i}", group="train", priority=100) for i in range(2)]


def worker_calls(environment, settings, monkeypatch) -> set[Call]:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    found: set[Call] = set()

    # Enforce: detection, planning, the executor (dry runs, evictions, marks, events, the PodGroup condition).
    with KubeTestServer() as server:
        server.load(budgeted_cluster())
        environment(server)
        # Eager tasks: detection opens the request, plan_request plans it, execute_plan executes it.
        detect_unschedulable_gangs.apply().get()
        assert PreemptionRequest.objects.get().state == RequestState.SUCCEEDED
        assert server.requests("/eviction", "POST")
        assert kubeevents.flush(30)  # the Events of the ledger, written after commit (series: patch)
        found |= calls(server)
        PreemptionRequest.objects.all().delete()

    # A budget spent by someone else between the check and the evictions: the unit is finished by deletion.
    with KubeTestServer() as server:
        server.load(budgeted_cluster())
        environment(server)
        cluster = runtime.get_cluster()
        request, _plan = plan_for(cluster)

        def check_then_someone_spends(objects, victims):
            result = shortfalls(objects, victims)
            assert cluster.evict("batch", "low-spare").code == 201
            return result

        monkeypatch.setattr(execution_module, "shortfalls", check_then_someone_spends)
        start = len(server.requests())
        outcome = execute(request.pk, cluster, retry=FAST)
        monkeypatch.undo()
        assert outcome.state == RequestState.SUCCEEDED, outcome.reason
        assert kubeevents.flush(30)
        found |= calls(server, start)

    # GANGWEB_PDB_POLICY=delete: victims deleted like kube-scheduler does.
    with KubeTestServer() as server:
        server.load(budgeted_cluster())
        environment(server)
        settings.GANGWEB_PDB_POLICY = "delete"
        request, _plan = plan_for(runtime.get_cluster())
        assert execute(request.pk, runtime.get_cluster(), retry=FAST).state == RequestState.SUCCEEDED
        settings.GANGWEB_PDB_POLICY = "respect"
        found |= calls(server)

    # Preempt with notice: each victim unit told (a PodGroup's annotation and condition, a pod's or a
    # CompositePodGroup's annotation), looked at afresh by name at the next look, evicted at the deadline.
    settings.GANGWEB_PREEMPTION_NOTICE_SECONDS = 1
    for objects, preemptor in (
        (small_cluster(), "team-a/train"),
        (single_pods(), "team-a/train"),
        (read_snapshot(UPSTREAM / "cpg-all-victim-across-nodes.yaml"), "default/high"),
    ):
        with KubeTestServer() as server:
            server.load(objects)
            environment(server)
            cluster = runtime.get_cluster()
            namespace, name = preemptor.split("/")
            request, _ = ledger.open_request(namespace, name, mode="enforce", trigger="rbac test")
            ledger.begin_planning(request.pk)
            result = planning.compute(planning.fresh_objects(cluster), request.podgroup, "gangweb")
            plan = ledger.record_plan(request.pk, result.plan, cost=result.cost, pods=result.pods)
            assert execute(request.pk, cluster, retry=FAST).state == NOTICE
            plan.refresh_from_db()
            deadline = plan.notice_deadline
            assert _eventually(lambda deadline=deadline: timezone.now() >= deadline)
            assert execute(request.pk, cluster, retry=FAST).state == RequestState.SUCCEEDED
            found |= calls(server)
            PreemptionRequest.objects.all().delete()
    settings.GANGWEB_PREEMPTION_NOTICE_SECONDS = 0

    # Observe mode: detection also reads kube-scheduler's Preempted events.
    with KubeTestServer() as server:
        server.load(kube_scheduler_preempted(small_cluster(), ["batch/mid-0", "batch/mid-1"]))
        environment(server)
        settings.GANGWEB_NAMESPACE_MODES = {"team-a": "observe"}
        assert detect_unschedulable_gangs.apply().get()["observed"]
        settings.GANGWEB_NAMESPACE_MODES = {}
        events_watch = ("events.k8s.io", "events", "watch")
        assert _eventually(lambda: events_watch in calls(server)), "the Preempted events are never watched"
        found |= calls(server)

    # The PodGroup ensurer over every gang source's pod: owner reads and PodGroup creation.
    with KubeTestServer() as server:
        environment(server)
        api = kube_config.new_client_from_config(config_file=os.environ["KUBECONFIG"])
        settings.DEMO = (
            True  # the pods go through the webhook's views in this process (only the demo has them)
        )
        for fixture in GANG_FIXTURES:
            if EXPECTED[fixture].get("owner"):
                create_owner(api, load_owner(EXPECTED[fixture]["owner"]))
            pod = through_the_webhook(load_pod(fixture))
            kube_client.CoreV1Api(api).create_namespaced_pod(pod["metadata"]["namespace"], pod)
        api.close()
        settings.DEMO = False
        start = len(server.requests())
        assert ensure_podgroups.apply().get()["created"]
        # Owners no fixture pod leaves unsized (LeaderWorkerSet pods carry their size, no fixture is a TFJob,
        # ...): the read the ensurer makes for any owner of the registry, through the same adapter call.
        cluster = runtime.get_cluster()
        for source in SOURCES:
            for owner in source.owners:
                version = f"{owner.group}/{owner.version}" if owner.group else owner.version
                assert cluster.get_object(version, owner.kind, "ml-team", "not-there") is None
        found |= calls(server, start)
    return found


@pytest.fixture
def exercised(environment, settings, monkeypatch) -> dict[str, set[Call]]:
    return {
        "webhook": webhook_calls(environment),
        "web": web_calls(environment),
        "worker": worker_calls(environment, settings, monkeypatch),
        "beat": set(),
    }


def can_i(real_cluster, process: str, call: Call) -> bool:
    """``kubectl auth can-i`` as the process's ServiceAccount, cluster-wide (gangweb's bindings are)."""
    group, resource, verb = call
    plural, _, subresource = resource.partition("/")
    args = ["auth", "can-i", verb, f"{plural}.{group}" if group else plural, "--all-namespaces"]
    args += [f"--as=system:serviceaccount:{NAMESPACE}:gangweb-{process}"]
    args += [f"--subresource={subresource}"] if subresource else []
    done = real_cluster.run(*args, check=False)
    answer = done.stdout.strip().splitlines()[-1:] or [""]
    assert answer[0] in ("yes", "no"), f"kubectl {' '.join(args)}: {done.stderr}"
    return answer[0] == "yes"


def real_authorizer_problems(real_cluster, exercised: dict[str, set[Call]]) -> list[str]:
    """What the real API server's RBAC authorizer decides otherwise than the code needs: a call a process
    makes that it may not, or a call only another process makes that it may."""
    questions = []
    for process in PROCESSES:
        others = set().union(*(exercised[p] for p in PROCESSES if p != process)) - exercised[process]
        questions += [(process, call, True) for call in sorted(exercised[process])]
        questions += [(process, call, False) for call in sorted(others)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda q: can_i(real_cluster, q[0], q[1]), questions))
    return [
        f"gangweb-{process} {'may not' if expected else 'may'} {call} on the real API server"
        for (process, call, expected), answer in zip(questions, answers, strict=True)
        if answer != expected
    ]


def test_each_process_is_granted_exactly_the_calls_its_code_makes(
    exercised, real_cluster, deployed, owner_crds
):
    objects = base_objects()
    problems = []
    for process in PROCESSES:
        have = granted(rules_of(objects, f"gangweb-{process}"))
        used, pending = exercised[process], set(PENDING[process])
        if missing := sorted(used - have):
            problems.append(f"gangweb-{process} lacks (apiGroup, resource, verb): {missing}")
        if extra := sorted(have - used - pending):
            problems.append(f"gangweb-{process} is granted calls its code never makes: {extra}")
        if landed := sorted(used & pending):
            problems.append(f"PENDING[{process!r}] lists calls the code makes now (move them out): {landed}")
        if ungranted := sorted(pending - have):
            problems.append(
                f"PENDING[{process!r}] lists calls deploy/base/rbac.yaml does not grant: {ungranted}"
            )
    problems += real_authorizer_problems(real_cluster, exercised)
    assert not problems, "\n".join(problems)
    # The scenarios did reach the calls that matter (a scenario that silently did nothing would pass above).
    assert {("scheduling.k8s.io", "podgroups", "watch")} <= exercised["webhook"]
    assert {
        ("", "pods/eviction", "create"),
        ("", "pods", "delete"),
        ("events.k8s.io", "events", "list"),
        ("events.k8s.io", "events", "watch"),
    } <= exercised["worker"]
    assert ("jobset.x-k8s.io", "jobsets", "get") in exercised["worker"]
    assert ("", "nodes", "list") in exercised["web"]
