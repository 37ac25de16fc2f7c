"""The registry of gang sources (admission/sources) against everything that must agree with it: its modules,
the fixtures, the webhook configuration, deploy/base/rbac.yaml and scheduler.kube's owner resources.

A new source fails here until each of those knows it, and each failure names what to add."""

from __future__ import annotations

import importlib
import re

import pytest
import yaml

from admission.inference import claim_of, infer_gang
from admission.podview import pod_view
from admission.policy import AdmissionPolicy
from admission.sources import SOURCES, controller_source, owner_resources, source_named
from admission.sources.base import GangSource
from admission.webhookconfig import controller_rules, webhook_configurations
from scheduler.kube.resources import OWNER_RESOURCES, resource_named
from tests.admission.support import EXPECTED, load_owner, load_pod
from tests.conftest import ROOT

MODULES = sorted(
    p.stem for p in (ROOT / "admission" / "sources").glob("*.py") if p.stem not in ("__init__", "base")
)
OWNERS = owner_resources()
IDS = [f"{r.api_version}/{r.kind}" for r in OWNERS]
GANG_FIXTURES = sorted(f for f in EXPECTED if EXPECTED[f]["podGroup"])


def test_every_source_module_is_registered_once():
    registered = [importlib.import_module(f"admission.sources.{m}").SOURCE for m in MODULES]
    assert all(isinstance(s, GangSource) for s in registered)
    assert sorted(registered, key=SOURCES.index) == list(SOURCES)  # every module in SOURCES, and only those
    names = [name for s in SOURCES for name in s.names]
    assert len(names) == len(set(names))


def test_sources_without_keys_are_listed_last_where_they_are_tried():
    keyed = [bool(s.labels or s.annotations) for s in SOURCES]
    assert keyed == sorted(keyed, reverse=True), "a source without trigger keys is tried after all others"


def test_a_source_that_reads_owners_can_size_its_gang_from_them():
    for source in SOURCES:
        assert bool(source.owners) == (source.size is not None), source.name
        assert source.controller is None or source.owners, source.name


@pytest.mark.parametrize("source", SOURCES, ids=[s.name for s in SOURCES])
def test_every_source_has_a_fixture_pod(source):
    claimed = {EXPECTED[f]["source"] for f in GANG_FIXTURES}
    assert claimed & set(source.names), (
        f"add a pod of {source.name} to tests/fixtures/admission/pods and expected.yaml"
    )


@pytest.mark.parametrize("fixture", GANG_FIXTURES)
def test_each_fixture_is_claimed_by_its_source_naming_a_declared_owner(fixture):
    expected = EXPECTED[fixture]
    claim = claim_of(pod_view(load_pod(fixture)).metadata)
    source = source_named(claim.source)
    assert source is not None and claim.source == expected["source"]
    if claim.owner is not None:
        assert (claim.owner.api_version, claim.owner.kind) in {(r.api_version, r.kind) for r in source.owners}
    if expected.get("owner"):
        owner = load_owner(expected["owner"])
        assert (owner["apiVersion"], owner["kind"]) in {(r.api_version, r.kind) for r in source.owners}


def test_a_kubeflow_pod_without_its_controller_reference_names_a_declared_owner():
    pod = load_pod("pytorchjob-worker.yaml")
    pod["metadata"].pop("ownerReferences", None)
    for operator, kind in (
        ("mpijob-controller", "MPIJob"),
        ("tfjob-controller", "TFJob"),
        ("other", "PyTorchJob"),
    ):
        pod["metadata"]["labels"]["training.kubeflow.org/operator-name"] = operator
        owner = infer_gang(pod, "ml-team", AdmissionPolicy()).owner
        assert owner.kind == kind and (owner.api_version, kind) in {(r.api_version, r.kind) for r in OWNERS}


# --- what is deployed and served ----------------------------------------------------------------------


def _cluster_role_rules() -> list[dict]:
    """The rules of the ClusterRole of the process that runs the ensurer (the worker), as deploy/base has it."""
    documents = yaml.safe_load_all((ROOT / "deploy" / "base" / "rbac.yaml").read_text())
    (role,) = [
        d
        for d in documents
        if d and d.get("kind") == "ClusterRole" and d["metadata"]["name"] == "gangweb-worker"
    ]
    return role["rules"]


@pytest.mark.parametrize("owner", OWNERS, ids=IDS)
def test_the_deployed_cluster_role_lets_the_ensurer_read_every_owner(owner):
    allowed = any(
        owner.group in rule.get("apiGroups", [])
        and owner.plural in rule.get("resources", [])
        and {"get", "*"} & set(rule.get("verbs", []))
        for rule in _cluster_role_rules()
    )
    assert allowed, (
        f"deploy/base/rbac.yaml: the ClusterRole gangweb-worker needs get on {owner.plural} in apiGroup "
        f"{owner.group!r} (the ensurer reads {owner.kind} to size gangs)"
    )


def test_the_deployed_owner_rules_are_the_registrys():
    """No owner rule outlives its source: the get-only rules after the ensurer's comment are the registry's."""
    get_only = {
        (group, plural)
        for rule in _cluster_role_rules()
        if rule.get("verbs") == ["get"]
        for group in rule["apiGroups"]
        for plural in rule["resources"]
    }
    assert get_only == {(r.group, r.plural) for r in OWNERS}


@pytest.mark.parametrize("owner", OWNERS, ids=IDS)
def test_scheduler_kube_serves_and_reads_every_owner_where_it_lives(owner):
    served = {(r.group, r.version, r.plural, r.kind) for r in OWNER_RESOURCES}
    assert (owner.group, owner.version, owner.plural, owner.kind) in served, (
        f"scheduler/kube/resources.py: add Resource({owner.group!r}, {owner.version!r}, {owner.plural!r}, "
        f"{owner.kind!r}) to the owner resources"
    )
    assert resource_named(owner.api_version, owner.kind).plural == owner.plural


def test_scheduler_kube_lists_no_owner_the_registry_does_not_have():
    assert {(r.group, r.version, r.plural, r.kind) for r in OWNER_RESOURCES} == {
        (r.group, r.version, r.plural, r.kind) for r in OWNERS
    }


# --- the validating webhook -----------------------------------------------------------------------------


def test_the_controllers_webhook_reviews_exactly_the_controllers_sources_check():
    [_, validating] = webhook_configurations(service="s", namespace="gangweb-system", ca_pem=b"x")
    [controllers] = [w for w in validating["webhooks"] if w["name"] == "controllers.validate.gangweb.io"]
    assert controllers["rules"] == controller_rules()
    reviewed = {
        (group, plural)
        for rule in controllers["rules"]
        for group in rule["apiGroups"]
        for plural in rule["resources"]
    }
    checked = {(r.group, r.plural) for s in SOURCES if s.controller for r in s.owners}
    assert reviewed == checked
    for source in SOURCES:
        for resource in source.owners:
            assert controller_source(resource.group, resource.kind) is (source if source.controller else None)


def test_docs_list_every_source_in_the_registrys_order():
    text = (ROOT / "docs" / "admission.md").read_text()
    section = text[text.index("## Finding the gang") : text.index("## The PodGroup")]
    rows = re.findall(r"^\| (\d+) \| ", section, flags=re.MULTILINE)
    assert [int(n) for n in rows] == list(range(1, len(SOURCES) + 1))
