"""Real shapes: every queue object of the fixtures, and every one the simulation publishes
(``GANGWEB_SIM_QUEUES``), validates against the CRD schema its project publishes
(``tests/fixtures/queues/crds/``, versions and licences in its README), strictly: a field the schema does not
name is an error, as a misspelt field would be silently pruned by a real API server."""

from __future__ import annotations

import copy
import json
from functools import cache

import jsonschema
import pytest

from scheduler.kinds import group_kind, group_of
from scheduler.simulation import SimulatedCluster
from scheduler.simulation.clock import SteppedClock

from .conftest import FIXTURES, load_objects

CRDS = FIXTURES / "crds"


@cache
def schemas() -> dict[str, dict]:
    found: dict[str, dict] = {}
    for path in sorted(CRDS.glob("*.json")):
        found.update(json.loads(path.read_text()))
    return found


def strict(schema: dict) -> dict:
    """The schema with every object that names its properties closed to others (unless it keeps unknown
    fields, as the schema says with x-kubernetes-preserve-unknown-fields)."""
    node = copy.deepcopy(schema)

    def close(part):
        if isinstance(part, dict):
            if (
                "properties" in part
                and "additionalProperties" not in part
                and not part.get("x-kubernetes-preserve-unknown-fields")
            ):
                part["additionalProperties"] = False
            for value in part.values():
                close(value)
        elif isinstance(part, list):
            for value in part:
                close(value)

    close(node)
    # metadata is the API server's ObjectMeta, which the CRD leaves open
    node.get("properties", {})["metadata"] = {"type": "object"}
    return node


def problems(obj: dict) -> list[str] | None:
    """None when no published schema covers the object; else what the schema refuses."""
    _, kind = group_kind(obj)
    schema = schemas().get(f"{obj.get('apiVersion')}/{kind}")
    if schema is None:
        return None
    validator = jsonschema.Draft7Validator(strict(schema))
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]


QUEUE_GROUPS = {"kueue.x-k8s.io", "scheduling.volcano.sh", "scheduling.run.ai"}


def queue_objects(objects: list[dict]) -> list[dict]:
    return [o for o in objects if group_of(o.get("apiVersion")) in QUEUE_GROUPS]


@pytest.mark.parametrize("system", ["kueue", "volcano", "kai"])
def test_each_fixture_has_the_published_shape(system):
    objects = queue_objects(load_objects(system))
    assert objects
    for obj in objects:
        found = problems(obj)
        assert found is not None, f"no published schema for {obj['apiVersion']} {obj['kind']}"
        assert found == [], f"{obj['kind']} {obj['metadata'].get('name')}: {found}"


@pytest.mark.parametrize("system", ["kueue", "volcano", "kai"])
def test_the_simulation_publishes_the_same_shapes(system):
    cluster = SimulatedCluster(nodes=16, seed=3, clock=SteppedClock(), queues=system)
    for _ in range(20):
        cluster.tick()
    objects = queue_objects(cluster.snapshot_objects())
    assert objects
    for obj in objects:
        assert problems(obj) == [], f"{obj['kind']} {obj['metadata'].get('name')}: {problems(obj)}"


def test_a_misspelt_field_is_refused():
    (queue,) = [
        o for o in load_objects("kueue") if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "team-b"
    ]
    quota = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    quota["nominalquota"] = quota.pop("nominalQuota")
    found = problems(queue)
    assert any("nominalquota" in p for p in found), found
    assert any("nominalQuota" in p and "required" in p for p in found), found
