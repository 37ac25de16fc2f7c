"""gangweb: gang (all-or-nothing) workloads on Kubernetes."""

from .celery import app as celery_app

__all__ = ["celery_app"]
