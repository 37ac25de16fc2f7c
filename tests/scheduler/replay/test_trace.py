"""The trace reader against a small synthesized excerpt in the real files' format."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.replay.trace import NODE_FILE, POD_FILE, TraceError, default_trace_dir, read_trace
from tests.scheduler.replay.conftest import FIXTURE


def test_reads_nodes_and_pods_with_their_fields():
    trace = read_trace(FIXTURE)
    assert len(trace.nodes) == 16
    first = trace.nodes[0]
    assert (first.name, first.cpu_milli, first.memory_mib, first.gpus, first.model) == (
        "syn-node-0000",
        96000,
        393216,
        8,
        "G2",
    )
    assert len(trace.pods) == 40
    pod = trace.pods[1]
    assert (pod.name, pod.num_gpu, pod.qos, pod.created, pod.scheduled, pod.deleted) == (
        "syn-pod-0001",
        2,
        "BE",
        9000812,
        9000813,
        9002494,
    )
    assert pod.duration == 9002494 - 9000813
    never = trace.pods[2]
    assert never.phase == "Pending" and never.scheduled is None and never.duration is None
    assert never.gpu_milli == 810 and never.gpus == 1  # a GPU share still takes a whole device


def test_a_missing_file_names_it(trace_dir: Path):
    (trace_dir / POD_FILE).unlink()
    with pytest.raises(TraceError, match=rf"trace file not found: .*{POD_FILE}"):
        read_trace(trace_dir)


def test_a_missing_directory_says_how_to_pass_one(tmp_path: Path):
    with pytest.raises(TraceError, match=r"trace directory not found: .*--trace DIR"):
        read_trace(tmp_path / "nowhere")


@pytest.mark.parametrize(
    ("line", "replacement", "message"),
    [
        (
            5,
            "syn-pod-0003,lots,8192,1,1000,,LS,Running,1,2,1",
            "line 5: column cpu_milli: not an integer: 'lots'",
        ),
        (3, "syn-pod-0001,16000,8192,2,1000,,XX,Running,1,2,1", "line 3: column qos: 'XX' is not one of"),
        (4, "syn-pod-0002,1,1", "line 4: expected 11 fields, got 3"),
        (2, "syn-pod-0000,8000,32768,1,1000,,LS,Running,50,10,40", "line 2: times out of order"),
    ],
)
def test_a_malformed_row_names_the_file_and_line(trace_dir: Path, line: int, replacement: str, message: str):
    path = trace_dir / POD_FILE
    lines = path.read_text().splitlines()
    lines[line - 1] = replacement
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError) as caught:
        read_trace(trace_dir)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_wrong_header_is_refused(trace_dir: Path):
    path = trace_dir / NODE_FILE
    path.write_text("sn,cpu,memory,gpu,model\nn1,1,1,1,G2\n")
    with pytest.raises(TraceError, match=rf"{NODE_FILE}: line 1: expected the header sn,cpu_milli"):
        read_trace(trace_dir)


def test_the_default_is_the_trace_shipped_inside_the_package():
    """A clone (or an installed wheel) replays with nothing beside it: the data lies in the package."""
    import scheduler.replay

    trace = read_trace(default_trace_dir())
    assert default_trace_dir().is_relative_to(Path(scheduler.replay.__file__).parent)
    assert len(trace.nodes) == 1213 and sum(node.gpus for node in trace.nodes) == 6212
    assert len(trace.pods) == 8152
