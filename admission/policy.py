"""What the webhook does per namespace: mode, default disruption mode, namespaces it never touches.

Plain values only. ``AdmissionPolicy.from_settings`` takes the settings object as an argument so this
module stays importable (and testable) without Django configured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MODES = ("enforce", "observe", "approve")
DISRUPTION_MODES = ("all", "single")
# Never admission-mutated: the control plane's own pods, node leases' namespace (good-practices page).
ALWAYS_SKIPPED = frozenset({"kube-system", "kube-node-lease"})


@dataclass(frozen=True)
class AdmissionPolicy:
    default_mode: str = "enforce"
    namespace_modes: Mapping[str, str] = field(default_factory=dict)
    # Training-style gangs lose all progress when one member dies: evict them as a unit by default.
    default_disruption_mode: str = "all"
    namespace_disruption_modes: Mapping[str, str] = field(default_factory=dict)
    own_namespace: str = "gangweb-system"
    extra_skipped_namespaces: frozenset[str] = frozenset()
    skipped_namespaces: frozenset[str] = field(init=False, default=frozenset())

    def __post_init__(self) -> None:
        for mode in (self.default_mode, *self.namespace_modes.values()):
            if mode not in MODES:
                raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        for mode in (self.default_disruption_mode, *self.namespace_disruption_modes.values()):
            if mode not in DISRUPTION_MODES:
                raise ValueError(
                    f"disruption mode must be one of {', '.join(DISRUPTION_MODES)}, got {mode!r}"
                )
        # Precomputed once: the hot path does one set lookup per request.
        object.__setattr__(
            self, "skipped_namespaces", ALWAYS_SKIPPED | {self.own_namespace} | self.extra_skipped_namespaces
        )

    def skips(self, namespace: str) -> bool:
        return namespace in self.skipped_namespaces

    def mode_for(self, namespace: str) -> str:
        return self.namespace_modes.get(namespace, self.default_mode)

    def disruption_mode_for(self, namespace: str) -> str:
        return self.namespace_disruption_modes.get(namespace, self.default_disruption_mode)

    @classmethod
    def from_settings(cls, settings: Any) -> AdmissionPolicy:
        """Read the GANGWEB_* settings (see docs/admission.md); missing ones take the defaults."""
        return cls(
            default_mode=getattr(settings, "GANGWEB_MODE", "enforce"),
            namespace_modes=dict(getattr(settings, "GANGWEB_NAMESPACE_MODES", {}) or {}),
            default_disruption_mode=getattr(settings, "GANGWEB_DISRUPTION_MODE", "all"),
            namespace_disruption_modes=dict(
                getattr(settings, "GANGWEB_NAMESPACE_DISRUPTION_MODES", {}) or {}
            ),
            own_namespace=getattr(settings, "GANGWEB_NAMESPACE", "gangweb-system"),
            extra_skipped_namespaces=frozenset(
                getattr(settings, "GANGWEB_ADMISSION_SKIP_NAMESPACES", ()) or ()
            ),
        )
