"""gangweb's own label: ``gangweb.io/pod-group`` names the gang, ``gangweb.io/min-count`` sizes it."""

from __future__ import annotations

from admission import labels as L
from admission.podview import ObjectMeta
from admission.sources.base import Claim, GangSource, positive_int


def claim(labels: dict[str, str], annotations: dict[str, str], metadata: ObjectMeta) -> Claim | None:
    name = labels.get(L.POD_GROUP_LABEL, "")
    if not name:
        return None
    return Claim(name, "gangweb", positive_int(annotations.get(L.MIN_COUNT_ANNOTATION)))


SOURCE = GangSource(
    "gangweb", claim, labels=frozenset({L.POD_GROUP_LABEL}), size_annotation=L.MIN_COUNT_ANNOTATION
)
