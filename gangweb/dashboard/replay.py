"""The dashboard's view of the latest trace replay: the report ``gang replay --plots DIR`` wrote there."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from django.conf import settings

from scheduler.replay.workload import TIERS

logger = logging.getLogger(__name__)

TIER_NAMES = tuple(name for name, _, _ in TIERS)

REPORT_FILE = "replay.json"
PLOTS = {
    "replay-utilisation.png": "GPU utilisation over time",
    "replay-waits.png": "Gang wait time by priority tier",
    "replay-lost.png": "GPU-hours lost",
}


def _folder() -> Path:
    return Path(settings.GANGWEB_REPLAY_DIR)


def latest() -> dict[str, Any]:
    """The template's context: the report's rows and plots, or a note saying how to make one."""
    folder = _folder()
    path = folder / REPORT_FILE
    # The setting's name, not the server's folder: a reader of the page has no business with its paths.
    command = "python manage.py gang replay --hours 24 --plots $GANGWEB_REPLAY_DIR"
    try:
        report = json.loads(path.read_text())
        policies = report["policies"]
    except FileNotFoundError:
        return {"report": None, "note": "No replay yet.", "command": command}
    except (OSError, ValueError, KeyError, TypeError):
        logger.exception("cannot read the latest replay %s", path)
        return {
            "report": None,
            "note": "The latest replay cannot be read (the server's log says why).",
            "command": command,
        }
    rows = []
    for name, p in policies.items():
        rows.append(
            {
                "policy": name,
                "figures": p,
                "waits": [
                    (p["waitSecondsP50ByTier"].get(t), p.get("waitSecondsP95ByTier", {}).get(t))
                    for t in TIER_NAMES
                ],
            }
        )
    plots = [{"name": n, "title": t} for n, t in PLOTS.items() if (folder / n).is_file()]
    return {
        "report": report,
        "rows": rows,
        "tiers": TIER_NAMES,
        "plots": plots,
        "note": "",
        "command": command,
    }


def plot_path(name: str) -> Path | None:
    """A plot of the latest replay by its fixed file name; None for any other name."""
    if name not in PLOTS:
        return None
    path = _folder() / name
    return path if path.is_file() else None
