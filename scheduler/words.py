"""Counted words for messages people read: ``plural(1, "pod")`` is "1 pod", ``plural(2, "pod")`` "2 pods"."""


def plural(count: int, word: str, many: str | None = None) -> str:
    """``count`` and ``word``, or ``many`` (default ``word + "s"``) when the count is not one."""
    return f"{count} {word if count == 1 else (many or word + 's')}"
