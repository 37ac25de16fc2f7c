"""The one error type the engine raises for bad input."""


class SnapshotError(ValueError):
    """Bad snapshot, unknown pod group or unknown policy.

    The message is always a single line a person can act on; it names the object and the field.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class PodGroupNotFound(SnapshotError):
    """The PodGroup asked for is not in the snapshot (a name to look up, not a malformed input)."""


def object_label(kind: str, obj: object, position: int | None = None) -> str:
    """``Pod ns/name`` (or ``Node name``), falling back to the position in the snapshot."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    if isinstance(name, str) and name:
        return f"{kind} {namespace}/{name}" if isinstance(namespace, str) and namespace else f"{kind} {name}"
    where = f" #{position}" if position is not None else ""
    return f"{kind}{where} (no metadata.name)"
