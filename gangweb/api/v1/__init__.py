"""The REST API v1 (``/api/v1/``, docs/design.md "API v1").

``queries/`` builds plain rows (dicts) from the ledger and the cluster, cut to a reader's scope, for the
API and the dashboard's pages alike; ``views/`` serves them with DRF; ``problems`` is the one error
shape; ``access`` who may read and act; ``redact`` the last guard against naming another tenant.
"""
