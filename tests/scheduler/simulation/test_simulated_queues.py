"""The simulated cluster under each queue manager (``GANGWEB_SIM_QUEUES``): the demo shows queues that borrow
and lend, read by the same read model as a real cluster's, and the gangs of the governed namespaces are the
queue manager's (never gangweb's victims) while the others stay gangweb's to preempt."""

from __future__ import annotations

import pytest

from scheduler.engine import parse_snapshot
from scheduler.queues import read_queues
from scheduler.queues.ownership import owners_of
from scheduler.simulation import SimulatedCluster
from scheduler.simulation.clock import SteppedClock
from scheduler.simulation.queues import GOVERNED


def _world(system: str) -> list[dict]:
    cluster = SimulatedCluster(nodes=64, seed=7, clock=SteppedClock(), queues=system)
    for _ in range(40):
        cluster.tick()
    return cluster.snapshot_objects()


@pytest.mark.parametrize("system", ["kueue", "volcano", "kai", "yunikorn"])
def test_each_system_shows_the_team_queues(system):
    objects = _world(system)
    snapshot = parse_snapshot(objects)
    model = read_queues(objects, snapshot)
    assert not model.warnings
    mine = [q for q in model.queues if q.system == system and q.kind != "LocalQueue"]
    assert {q.name.removeprefix("root.") for q in mine} >= set(GOVERNED)
    # the running gangs of the governed namespaces hold what their queues use
    assert sum(q.figures("gpu").used for q in mine if q.name.removeprefix("root.") in GOVERNED) > 0
    assert any(q.pending for q in mine)
    if system != "volcano":  # Volcano's proportion gives each queue what it uses: nobody borrows
        assert any(q.figures("gpu").borrowed > 0 for q in mine)
        assert any(q.figures("gpu").lent > 0 for q in mine)
    owned = {key.split("/")[0] for key in owners_of(objects, snapshot)}
    # YuniKorn's pods keep the default scheduler here: no signal of its own, gangweb may take them
    assert owned == (set() if system == "yunikorn" else set(GOVERNED))


def test_without_a_queue_manager_nothing_changes():
    objects = _world("none")
    assert not read_queues(objects, parse_snapshot(objects)).queues
    assert not owners_of(objects, parse_snapshot(objects))


def test_an_unknown_queue_manager_is_refused():
    with pytest.raises(ValueError, match="must be one of none, kueue, volcano, kai, yunikorn"):
        SimulatedCluster(nodes=4, queues="slurm")
