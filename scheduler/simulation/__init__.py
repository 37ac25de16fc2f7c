"""The simulated cluster of the demo: Kubernetes-shaped objects without a Kubernetes (pure Python)."""

from scheduler.simulation.clock import SteppedClock, WallClock
from scheduler.simulation.cluster import SimulatedCluster

__all__ = ["SimulatedCluster", "SteppedClock", "WallClock"]
