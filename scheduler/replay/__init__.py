"""Trace replay: a discrete-event simulation of a real cluster's shape under each preemption policy.

Plain Python (no Django, kubernetes or Celery); ``manage.py gang replay`` is its adapter. docs/replay.md
describes the model, the report and the figures of a full run.
"""
