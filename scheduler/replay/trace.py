"""Reading Alibaba's ``cluster-trace-gpu-v2023`` ("openb"): the GPU node inventory and the pod list.

The two unmodified CSV files ship with gangweb (``scheduler/replay/traces/openb/``, provenance and
terms in its README) so a replay needs nothing outside the package; ``--trace DIR`` reads another copy.
A missing file, a wrong header or a malformed row raises ``TraceError``: one line naming the file and
its line number, which ``gang replay`` prints before exiting 2.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

POD_FILE = "openb_pod_list_default.csv"
NODE_FILE = "openb_node_list_gpu_node.csv"
POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
QOS_CLASSES = ("LS", "BE", "Burstable", "Guaranteed")
# The copy shipped inside the package: a clone or an installed wheel replays without other files.
BUNDLED_TRACE_DIR = Path(__file__).resolve().parent / "traces" / "openb"


class TraceError(ValueError):
    """A trace that cannot be read; the message is one line naming the file (and line, for a bad row)."""


@dataclass(frozen=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True)
class TracePod:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    qos: str
    phase: str
    created: int
    scheduled: int | None  # None: the pod was never scheduled (Pending in the trace)
    deleted: int

    @property
    def gpus(self) -> int:
        """Whole GPUs held: a fractional share (``gpu_milli`` < 1000) still takes one device here."""
        return self.num_gpu

    @property
    def duration(self) -> int | None:
        return None if self.scheduled is None else self.deleted - self.scheduled


@dataclass(frozen=True)
class Trace:
    directory: Path
    nodes: tuple[TraceNode, ...]
    pods: tuple[TracePod, ...]


def default_trace_dir() -> Path:
    """The trace shipped with gangweb, read when ``--trace`` is not given."""
    return BUNDLED_TRACE_DIR


def read_trace(directory: Path) -> Trace:
    directory = Path(directory)
    if not directory.is_dir():
        raise TraceError(
            f"trace directory not found: {directory} (pass --trace DIR with {POD_FILE} and {NODE_FILE})"
        )
    nodes = tuple(_rows(directory / NODE_FILE, NODE_COLUMNS, _node))
    if not nodes:
        raise TraceError(f"{directory / NODE_FILE}: no nodes")
    pods = tuple(_rows(directory / POD_FILE, POD_COLUMNS, _pod))
    return Trace(directory, nodes, pods)


def _rows(path: Path, columns: tuple[str, ...], build):
    if not path.is_file():
        raise TraceError(f"trace file not found: {path}")
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None or tuple(h.strip() for h in header) != columns:
                raise TraceError(
                    f"{path}: line 1: expected the header {','.join(columns)}, got {','.join(header or [])!r}"
                )
            names: set[str] = set()
            for row in reader:
                line = reader.line_num
                if not row:
                    continue
                if len(row) != len(columns):
                    raise TraceError(f"{path}: line {line}: expected {len(columns)} fields, got {len(row)}")
                try:
                    item = build(dict(zip(columns, row)))
                except ValueError as exc:
                    raise TraceError(f"{path}: line {line}: {exc}") from None
                if item.name in names:
                    raise TraceError(f"{path}: line {line}: duplicate name {item.name!r}")
                names.add(item.name)
                yield item
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise TraceError(f"{path}: malformed CSV: {exc}") from None
    except OSError as exc:
        raise TraceError(f"cannot read trace file {path}: {exc.strerror or exc}") from None


def _int(row: dict[str, str], column: str, *, optional: bool = False, low: int = 0) -> int | None:
    text = row[column].strip()
    if not text and optional:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"column {column}: not an integer: {text!r}") from None
    if value < low:
        raise ValueError(f"column {column}: {value} is below {low}")
    return value


def _node(row: dict[str, str]) -> TraceNode:
    name = row["sn"].strip()
    if not name:
        raise ValueError("column sn: empty")
    return TraceNode(
        name=name,
        cpu_milli=_int(row, "cpu_milli", low=1),
        memory_mib=_int(row, "memory_mib", low=1),
        gpus=_int(row, "gpu"),
        model=row["model"].strip() or "unknown",
    )


def _pod(row: dict[str, str]) -> TracePod:
    name = row["name"].strip()
    if not name:
        raise ValueError("column name: empty")
    qos = row["qos"].strip()
    if qos not in QOS_CLASSES:
        raise ValueError(f"column qos: {qos!r} is not one of {', '.join(QOS_CLASSES)}")
    num_gpu = _int(row, "num_gpu")
    gpu_milli = _int(row, "gpu_milli")
    if gpu_milli > 1000:
        raise ValueError(f"column gpu_milli: {gpu_milli} is above 1000")
    created = _int(row, "creation_time")
    scheduled = _int(row, "scheduled_time", optional=True)
    deleted = _int(row, "deletion_time")
    if scheduled is not None and (scheduled < created or deleted < scheduled):
        raise ValueError(f"times out of order: created {created}, scheduled {scheduled}, deleted {deleted}")
    return TracePod(
        name=name,
        cpu_milli=_int(row, "cpu_milli"),
        memory_mib=_int(row, "memory_mib"),
        num_gpu=num_gpu,
        gpu_milli=gpu_milli,
        qos=qos,
        phase=row["pod_phase"].strip(),
        created=created,
        scheduled=scheduled,
        deleted=deleted,
    )
