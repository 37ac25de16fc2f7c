"""The preemption pipeline: a Django app (label ``scheduler``) that turns gangs that stay pending into
requests, plans and evictions, with a durable ledger in the database (docs/pipeline.md).

``models`` and ``ledger`` (every ledger write), ``detection`` and ``planning`` (pure steps around the
engine), ``execution/`` (re-check, budgets, dry runs,
evictions), ``locks`` (per-node Redis leases), ``observe`` (what kube-scheduler preempted), ``tasks``
(Celery, thin), ``runtime`` (the configured cluster and the namespace modes), ``events`` (live events,
through the publisher gangweb hands in at startup), ``metrics`` and ``admin``.
"""
