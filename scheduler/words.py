"""Words for messages people read: counts (``plural(1, "pod")`` is "1 pod", ``plural(2, "pod")`` "2 pods")
and times (``utc``)."""

from __future__ import annotations

from datetime import UTC, datetime


def plural(count: int, word: str, many: str | None = None) -> str:
    """``count`` and ``word``, or ``many`` (default ``word + "s"``) when the count is not one."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def utc(moment: datetime) -> str:
    """``moment`` as messages say a time, "2026-12-02 09:51:44 UTC": the form the pages find in server
    text and show in the reader's locale and zone (``timesIn``, gangweb/static/dashboard/words.js)."""
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
