"""A watch cache's heap kept out of the garbage collector's full passes (scheduler/engine/caching/heap.py), and the
snapshots it replaces freed by reference counting alone (scheduler/engine/backref.py)."""

from __future__ import annotations

import gc
import sys
import time
import weakref

import pytest

from scheduler.engine import load_snapshot, plan
from scheduler.engine.caching.heap import FULL, YOUNG, HeapSettler
from scheduler.engine.caching.live import LiveSnapshot
from testkit.synthetic import preemptor_name, synthetic_cluster
from tests.conftest import ROOT

DRA = ROOT / "tests" / "fixtures" / "engine" / "dra-gpus.yaml"


@pytest.fixture
def collector_off():
    """The collector neither runs nor is left frozen for the tests after this one."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was:
            gc.enable()


def test_a_replaced_live_snapshot_is_freed_without_the_cyclic_collector(collector_off):
    objects = synthetic_cluster(48, seed=3)
    live = LiveSnapshot(objects)
    snapshot = live.snapshot()
    assert plan(snapshot, preemptor_name(64)).feasible  # a plan fills the snapshot's caches
    local = live.local([snapshot.nodes[0].name], preemptor_name(64))
    refs = [weakref.ref(snapshot), weakref.ref(snapshot.units), weakref.ref(local)]
    del snapshot, local
    live.apply("DELETED", next(o for o in objects if o["kind"] == "Pod" and o["spec"].get("nodeName")))
    live.snapshot()
    assert [ref() for ref in refs] == [None, None, None]


def test_a_dra_snapshot_is_freed_without_the_cyclic_collector(collector_off):
    snapshot = load_snapshot(DRA)
    assert snapshot.devices is not None
    assert plan(snapshot, "ml/train").outcome == "preempt"
    refs = [weakref.ref(snapshot), weakref.ref(snapshot.devices), weakref.ref(snapshot.units)]
    del snapshot
    assert [ref() for ref in refs] == [None, None, None]


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_settling_freezes_the_heap_and_collects_in_full_once_it_has_grown(collector_off):
    settler = HeapSettler(growth=0.25, check_seconds=0.0)
    assert settler.settle() == FULL
    frozen = gc.get_freeze_count()
    assert frozen > 0 and gc.collect() == 0  # nothing left in the collector's sight
    garbage = Cycle()
    ref = weakref.ref(garbage)
    assert settler.settle() == YOUNG  # frozen in use, then it becomes cyclic garbage
    del garbage
    assert gc.collect() == 0 and ref() is not None  # out of reach while frozen
    kept = [{"n": [i]} for i in range(sys.getallocatedblocks())]  # the heap grows by far more than a quarter
    assert settler.settle() == FULL
    assert ref() is None  # the full settle collected it
    assert gc.get_freeze_count() >= frozen + len(kept)
    assert settler.settle() == YOUNG


def test_settling_counts_the_frozen_heap_at_most_once_per_check_period(collector_off):
    settler = HeapSettler(growth=0.25, check_seconds=3600.0)
    assert settler.settle() == FULL
    kept = [{"n": [i]} for i in range(sys.getallocatedblocks())]
    assert settler.settle() == YOUNG and kept  # grown, but not counted again within the hour


def test_the_background_index_settles_the_heap_when_asked():
    live = LiveSnapshot(synthetic_cluster(48, seed=3))
    try:
        live.keep_indexed(quiet=0.01, settle_heap=True)
        deadline = time.monotonic() + 60  # generous: a loaded 2-core machine
        while not live.ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        snapshot = live.snapshot()

        def frozen() -> bool:  # out of the collector's sight: in none of its generations
            return all(o is not snapshot for o in gc.get_objects())

        while not frozen() and time.monotonic() < deadline:
            time.sleep(0.05)  # the settle follows the index on the same thread
        assert frozen()
        assert plan(snapshot, preemptor_name(64)).feasible
    finally:
        live.stop_indexing()
        gc.unfreeze()


def test_an_index_built_on_demand_is_frozen_as_it_is_built():
    """Under constant churn nothing is quiet: a plan's own index is settled too, before the collector wakes."""
    live = LiveSnapshot(synthetic_cluster(48, seed=3))
    try:
        live.keep_indexed(quiet=3600, settle_heap=True)  # the background never gets its quiet moment
        snapshot = live.snapshot()
        assert all(o is not snapshot and o is not snapshot.units for o in gc.get_objects())
        overridden = live.snapshot({("Pod", "nowhere/none"): None})  # a re-check's cut: not the live index
        assert any(o is overridden for o in gc.get_objects())
    finally:
        live.stop_indexing()
        gc.unfreeze()
