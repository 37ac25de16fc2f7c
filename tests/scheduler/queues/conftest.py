from pathlib import Path

import pytest
import yaml

from scheduler.engine.snapshot import _flatten, parse_snapshot
from scheduler.queues import read_queues

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "queues"


def load_objects(name: str) -> list[dict]:
    return _flatten(list(yaml.safe_load_all((FIXTURES / f"{name}.yaml").read_text())))


def model_of(objects):
    return read_queues(objects, parse_snapshot(objects))


@pytest.fixture
def fixture_model():
    return lambda name: model_of(load_objects(name))
