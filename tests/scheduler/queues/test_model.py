"""The read model on each system's fixture: the figures a person checks against the system's own tools."""

from fractions import Fraction

from scheduler.queues.kai import KaiQueue, Share, divide

from .conftest import load_objects, model_of


def _row(model, system, name):
    queue = model.find(system, name)
    assert queue is not None, f"{system} {name} missing"
    return queue.to_dict()


def test_kueue_figures_equal_kueues_status(fixture_model):
    model = fixture_model("kueue")
    team_a, team_b = _row(model, "kueue", "team-a"), _row(model, "kueue", "team-b")
    assert team_a["resources"]["gpu"] == {"guaranteed": 16, "limit": 24, "used": 24, "borrowed": 8, "lent": 0}
    assert team_b["resources"]["gpu"] == {
        "guaranteed": 16,
        "limit": None,
        "used": 0,
        "borrowed": 0,
        "lent": 8,
    }
    # The fixture carries Kueue's own status: borrowed and weightedShare match it.
    cq = next(
        o for o in load_objects("kueue") if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-a"
    )
    assert team_a["share"]["weightedShare"] == cq["status"]["fairSharing"]["weightedShare"] == 250
    assert team_a["share"]["dominantResource"] == "nvidia.com/gpu"
    assert team_a["parent"] == "research" and _row(model, "kueue", "research")["kind"] == "Cohort"
    assert team_b["pending"] == [{"podGroup": "team-b/train-b", "position": 1}]
    assert _row(model, "kueue", "team-b/main")["pending"] == [{"podGroup": "team-b/train-b", "position": 1}]
    assert team_a["resources"]["cpu"]["used"] == 24 and team_a["resources"]["memory"]["used"] == 192 * 2**30


def test_volcano_proportion_deserved():
    model = model_of(load_objects("volcano"))
    research, prod = _row(model, "volcano", "research"), _row(model, "volcano", "prod")
    # research (weight 3) is held to its capability, prod gets what it asks; default has no job.
    assert research["resources"]["gpu"]["guaranteed"] == 24 and prod["resources"]["gpu"]["guaranteed"] == 8
    assert research["share"]["share"] == round(16 / 24, 4) and prod["share"]["share"] == 1.0
    assert research["pending"] == [{"podGroup": "ml/train-r2", "position": 1}]
    assert _row(model, "volcano", "default")["share"]["share"] == 0.0


def test_volcano_capacity_plugin_takes_deserved_as_given():
    objects = load_objects("volcano")
    for obj in objects:
        if obj["kind"] == "Queue" and obj["metadata"]["name"] == "research":
            obj["spec"]["deserved"] = {"nvidia.com/gpu": "12"}
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
            "data": {
                "volcano-scheduler.conf": "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: capacity\n"
            },
        }
    )
    research = _row(model_of(objects), "volcano", "research")
    assert research["share"]["plugin"] == "capacity"
    assert research["resources"]["gpu"]["guaranteed"] == 12 and research["resources"]["gpu"]["borrowed"] == 4


def test_kai_fair_share_deserved_then_surplus_by_weight():
    model = model_of(load_objects("kai"))
    vision, nlp, dept = (_row(model, "kai", n) for n in ("team-vision", "team-nlp", "dept-ai"))
    # dept-ai, alone at the top, gets the whole cluster; team-nlp's quota (16) is all it asks; team-vision
    # gets its quota (8) and the surplus it asks for within its limit (16).
    assert dept["share"]["fairShare"]["gpu"] == 32
    assert vision["share"]["fairShare"]["gpu"] == 16 and nlp["share"]["fairShare"]["gpu"] == 16
    assert vision["share"]["saturation"]["gpu"] == 1.0 and nlp["share"]["saturation"]["gpu"] == 0.0
    assert vision["resources"]["gpu"] == {"guaranteed": 8, "limit": 16, "used": 16, "borrowed": 8, "lent": 0}
    assert nlp["resources"]["gpu"]["lent"] == 8
    assert nlp["pending"] == [{"podGroup": "nlp/train-n", "position": 1}]


def _kai(name, quota, request, weight=1.0, priority=0, limit=-1):
    queue = KaiQueue(name, priority, 0.0)
    queue.shares["gpu"] = Share(quota, limit, weight, request)
    return queue


def test_kai_surplus_goes_by_priority_first_then_weight():
    high_1, high_2 = _kai("h1", 0, 4, priority=2), _kai("h2", 0, 4, priority=2)
    low_a, low_b = _kai("a", 0, 100, weight=1), _kai("b", 0, 100, weight=3)
    assert divide(20, [high_1, high_2, low_a, low_b], "gpu") == 0
    assert [q.shares["gpu"].fair_share for q in (high_1, high_2, low_a, low_b)] == [4, 4, 3, 9]


def test_kai_gives_what_rounding_left_to_the_queue_left_wanting_most():
    a, b = _kai("a", 0, 100, weight=1), _kai("b", 0, 100, weight=2)
    divide(10, [a, b], "gpu")
    # 10/3 and 20/3 rounded down are 3 and 6; the unit left goes to b (2/3 short, more than a's 1/3).
    assert (a.shares["gpu"].fair_share, b.shares["gpu"].fair_share) == (3, 7)


def test_kai_alone_at_its_priority_takes_the_whole_surplus():
    only, other = _kai("only", 0, 10, priority=2), _kai("other", 0, 100)
    divide(20, [only, other], "gpu")
    assert (only.shares["gpu"].fair_share, other.shares["gpu"].fair_share) == (20, 0)


def test_yunikorn_queues_from_the_configmap():
    model = model_of(load_objects("yunikorn"))
    research, prod = _row(model, "yunikorn", "root.research"), _row(model, "yunikorn", "root.prod")
    assert research["resources"]["gpu"] == {
        "guaranteed": 16,
        "limit": 24,
        "used": 24,
        "borrowed": 8,
        "lent": 0,
    }
    assert prod["resources"]["gpu"]["lent"] == 8 and research["share"]["usageRatio"] == 1.5
    assert prod["pending"] == [{"podGroup": "prod/serve-y", "position": 1}]


def test_gangweb_figure_is_the_same_rule_everywhere():
    for system, name in (("kueue", "team-a"), ("kai", "team-vision"), ("yunikorn", "root.research")):
        queue = model_of(
            load_objects({"team-a": "kueue", "team-vision": "kai", "root.research": "yunikorn"}[name])
        ).find(system, name)
        expected = max(
            Fraction(f.used) / Fraction(f.guaranteed) for f in queue.resources.values() if f.guaranteed
        )
        assert queue.share["gangweb"] == round(float(expected), 4)


def test_a_cluster_without_queue_managers_has_no_queues():
    objects = [o for o in load_objects("kueue") if o["kind"] in ("Node", "Pod")]
    assert model_of(objects).queues == []
