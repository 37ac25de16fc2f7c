"""ResourceClaims a PodGroup shares (KEP-5729): the PodGroup's entries, and the pod entries meant to share
them, as the validating webhook judges them (admission/claims.py)."""

from __future__ import annotations

import copy
import json
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from admission.handler import VALIDATE, Webhook
from admission.policy import AdmissionPolicy
from admission.state import PodGroupCache
from scheduler.engine.dra import builders as dra
from tests.admission.support import load_pod, review_bytes

PODGROUP = ("scheduling.k8s.io", "v1beta1", "PodGroup")
WORKLOAD = ("scheduling.k8s.io", "v1beta1", "Workload")
# A multi-node NVLink gang's claims, as a JobSet-style controller writes them: one IMEX channel shared
# by the whole group (a template), one pre-made claim for a shared scratch device.
GROUP_CLAIMS = [
    {"name": "imex-channel", "resourceClaimTemplateName": "imex-channel"},
    {"name": "scratch", "resourceClaimName": "scratch-nvme"},
]


def podgroup(claims=GROUP_CLAIMS, name="trainer-7f9c"):
    spec = {
        "schedulingPolicy": {"gang": {"minCount": 4}},
        "priorityClassName": "batch-high",
        "priority": 100000,
    }
    if claims is not None:
        spec["resourceClaims"] = copy.deepcopy(claims)
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml-team", "uid": "0e6c2d1b-7a55-4f0e-9d1c-3b2a1f0e9c8d"},
        "spec": spec,
    }


def member(claims, group="trainer-7f9c"):
    """The Job's pod (tests/fixtures/admission/pods/job-parallel.yaml) in the gang, its trainer
    container using every claim, as the pod template would say."""
    pod = load_pod("job-parallel.yaml")
    pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return dra.with_claims(pod, copy.deepcopy(claims))


@pytest.fixture
def webhook():
    cache = PodGroupCache()
    cache.apply("ADDED", podgroup())
    cache.apply("RELIST", None)
    return Webhook(AdmissionPolicy(), cache)


def decide(webhook, obj, **kwargs) -> dict:
    return json.loads(webhook.handle(VALIDATE, review_bytes(obj, **kwargs)).body)["response"]


def test_a_pod_repeating_the_podgroups_entries_exactly_shares_them_silently(webhook):
    response = decide(
        webhook, member(GROUP_CLAIMS + [{"name": "own", "resourceClaimTemplateName": "one-gpu"}])
    )
    assert response["allowed"] is True and "warnings" not in response


def test_an_entry_named_like_the_groups_claim_with_another_source_is_denied_naming_the_fix(webhook):
    claims = [{"name": "imex-channel", "resourceClaimTemplateName": "imex-channel-v2"}]
    response = decide(webhook, member(claims))
    assert response["allowed"] is False and response["status"]["code"] == 403
    assert response["status"]["message"] == (
        "Pod ml-team/resnet-train-*: spec.resourceClaims[0] ('imex-channel') has the name of PodGroup "
        "trainer-7f9c's claim but names ResourceClaimTemplate imex-channel-v2, where the PodGroup's names "
        "ResourceClaimTemplate imex-channel, so the pod would get a claim of its own instead of the group's; "
        "copy the PodGroup's entry exactly (name: imex-channel, resourceClaimTemplateName: imex-channel) or "
        "give this entry another name"
    )
    by_claim = decide(webhook, member([{"name": "scratch", "resourceClaimTemplateName": "scratch-nvme"}]))
    assert by_claim["allowed"] is False
    assert "(name: scratch, resourceClaimName: scratch-nvme)" in by_claim["status"]["message"]


def test_each_pod_asking_its_own_claim_from_the_groups_template_is_warned(webhook):
    claims = [{"name": "channel", "resourceClaimTemplateName": "imex-channel"}]
    response = decide(webhook, member(claims))
    assert response["allowed"] is True
    assert response["warnings"] == [
        "gangweb: spec.resourceClaims[0] ('channel') makes a claim for this pod alone from ResourceClaimTemplate "
        "imex-channel, which PodGroup trainer-7f9c shares as 'imex-channel': each pod of the gang gets devices "
        "of its own. To share the group's allocation, name the entry 'imex-channel'"
    ]


def test_the_groups_named_claim_under_another_name_is_warned(webhook):
    response = decide(webhook, member([{"name": "nvme", "resourceClaimName": "scratch-nvme"}]))
    assert response["allowed"] is True
    assert "reserved for this pod apart from the group" in response["warnings"][0]


def test_claims_unrelated_to_the_group_and_pods_of_unknown_groups_pass(webhook):
    own = [{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}]
    assert "warnings" not in decide(webhook, member(own))
    near_miss = [{"name": "imex-channel", "resourceClaimTemplateName": "other"}]
    unknown = decide(webhook, member(near_miss, group="not-listed-yet"))
    assert unknown["allowed"] is True and "warnings" not in unknown  # nothing to compare with yet


def test_the_groups_claims_are_read_as_the_api_holds_them_now(webhook):
    near_miss = member([{"name": "imex-channel", "resourceClaimTemplateName": "other"}])
    assert decide(webhook, near_miss)["allowed"] is False
    webhook.podgroups.apply("MODIFIED", podgroup(claims=None))
    assert decide(webhook, near_miss)["allowed"] is True


def test_a_pod_update_is_not_judged_on_its_claims(webhook):
    pod = member([{"name": "imex-channel", "resourceClaimTemplateName": "other"}])
    pod["metadata"]["name"] = "resnet-train-x2k9q"
    assert decide(webhook, pod, operation="UPDATE", old=pod)["allowed"] is True


@pytest.mark.parametrize(
    ("claims", "fragment"),
    [
        ({"name": "x"}, "spec.resourceClaims is dict; make it a list of claims"),
        (["imex"], "spec.resourceClaims[0] is str; give a name and one claim source"),
        ([{"name": "a", "resourceClaimTemplateName": "Bad_Name"}], "resourceClaimTemplateName is 'Bad_Name'"),
        ([{"name": "a", "resourceClaimName": ""}], "spec.resourceClaims[0].resourceClaimName is ''"),
    ],
)
def test_podgroup_claims_of_the_wrong_shape_are_denied_naming_the_field(webhook, claims, fragment):
    response = decide(webhook, podgroup(claims=claims), kind=PODGROUP)
    assert response["allowed"] is False and fragment in response["status"]["message"]


def test_a_workload_templates_claims_follow_the_same_rules(webhook):
    template = {
        "name": "workers",
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "resourceClaims": [{"name": "c", "resourceClaimName": "a"}] * 2,
    }
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ml-team"},
        "spec": {"podGroupTemplates": [template]},
    }
    response = decide(webhook, workload, kind=WORKLOAD)
    assert response["allowed"] is False
    assert (
        "spec.podGroupTemplates[0].resourceClaims[1].name 'c' is used twice" in response["status"]["message"]
    )


def test_a_pod_whose_claim_entries_have_the_wrong_json_type_is_a_bad_request(webhook):
    pod = member(GROUP_CLAIMS)
    pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = 7
    answer = webhook.handle(VALIDATE, review_bytes(pod))
    assert answer.status == 400 and b"resourceClaims" in answer.body


# -- fuzz: odd claims on either side never crash a rule -----------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
names = st.sampled_from(["imex-channel", "scratch", "channel", "", "Bad_Name", "x" * 70])
entries = st.fixed_dictionaries(
    {"name": names},
    optional={
        "resourceClaimName": st.sampled_from(["scratch-nvme", "imex-channel", ""]) | json_values,
        "resourceClaimTemplateName": st.sampled_from(["imex-channel", "other", ""]) | json_values,
    },
)
claim_lists = st.lists(entries | json_values, max_size=6) | json_values


class _Errors(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(group_claims=claim_lists, pod_claims=claim_lists)
def test_odd_claims_in_the_cache_the_podgroup_review_and_the_pod_never_crash_a_rule(group_claims, pod_claims):
    errors = _Errors()
    logging.getLogger("admission.handler").addHandler(errors)
    try:
        cache = PodGroupCache()
        cache.apply("ADDED", podgroup(claims=group_claims))
        webhook = Webhook(AdmissionPolicy(), cache)
        pod = load_pod("job-parallel.yaml")
        pod["spec"]["schedulingGroup"] = {"podGroupName": "trainer-7f9c"}
        pod["spec"]["resourceClaims"] = pod_claims
        for body in (review_bytes(pod), review_bytes(podgroup(claims=group_claims), kind=PODGROUP)):
            answer = webhook.handle(VALIDATE, body)
            assert answer.status in (200, 400)
            if answer.status == 200:
                response = json.loads(answer.body)["response"]
                assert isinstance(response["allowed"], bool)
                assert response["allowed"] or response["status"]["message"]
    finally:
        logging.getLogger("admission.handler").removeHandler(errors)
    assert not errors.records, errors.records[0].getMessage()
