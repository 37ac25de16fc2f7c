"""``manage.py gang queues --snapshot FILE [--json]``: the queue read model of a snapshot (docs/queues.md).

Offline like ``gang plan``: no database, no SECRET_KEY. Bad input: one line on stderr, exit 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from scheduler.engine import SnapshotError, load_objects, parse_snapshot
from scheduler.queues import read_queues


def queues_arguments(parser) -> None:
    parser.add_argument(
        "--snapshot",
        required=True,
        help="snapshot file (List or multi-document YAML/JSON); - reads standard input",
    )
    parser.add_argument("--json", action="store_true", help='print {"queues": [...]} instead of a table')
    parser.add_argument("--debug", action="store_true", help="let an unexpected error end with its traceback")


def load_model(source: str):
    """(objects, snapshot, model) of a snapshot file; SnapshotError or ValueError name what is wrong."""
    objects = load_objects(sys.stdin.buffer if source == "-" else Path(source))
    snapshot = parse_snapshot(objects)
    return objects, snapshot, read_queues(objects, snapshot)


def run_queues_command(options: dict[str, Any], stdout, fail) -> None:
    try:
        _, _, model = load_model(options["snapshot"])
    except (SnapshotError, ValueError) as exc:
        fail(str(exc))
    except MemoryError:
        fail("snapshot too large to load")
    except Exception as exc:
        if options["debug"]:
            raise
        fail(f"unexpected {type(exc).__name__}: {exc} (a bug; rerun with --debug for the traceback)")
    if options["json"]:
        stdout.write(json.dumps(model.to_dict(), indent=2))
        return
    stdout.write(table(model.to_dict()["queues"]))


def _pair(figures: dict | None, key: str) -> str:
    if not figures:
        return "-"
    value = figures.get(key)
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def table(queues: list[dict]) -> str:
    """One line per queue: GPUs used/guaranteed, borrowed, lent, the system's figure and gangweb's."""
    header = [
        "SYSTEM",
        "KIND",
        "NAME",
        "PARENT",
        "GPU USED/GUAR",
        "BORROWED",
        "LENT",
        "SHARE",
        "GANGWEB",
        "PENDING",
    ]
    rows = [header]
    for q in queues:
        gpu = q["resources"].get("gpu")
        own = {
            k: v
            for k, v in q["share"].items()
            if k != "gangweb" and v is not None and not isinstance(v, dict)
        }
        rows.append(
            [
                q["system"],
                q["kind"],
                q["name"],
                q["parent"] or "-",
                f"{_pair(gpu, 'used')}/{_pair(gpu, 'guaranteed')}",
                _pair(gpu, "borrowed"),
                _pair(gpu, "lent"),
                " ".join(f"{k}={v}" for k, v in own.items()) or "-",
                "-" if q["share"].get("gangweb") is None else str(q["share"]["gangweb"]),
                ",".join(f"{p['position']}:{p['podGroup']}" for p in q["pending"]) or "-",
            ]
        )
    if len(rows) == 1:
        return "no queues in this snapshot (no Kueue, Volcano, KAI or YuniKorn objects)"
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows)
