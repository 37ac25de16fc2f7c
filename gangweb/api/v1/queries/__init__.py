"""Plain rows for the API v1 and the dashboard's pages, cut to a reader's scope.

Each function takes the reader's ``Scope`` (gangweb/access/scope.py) and answers dicts with the
API's camelCase keys (or, for the ledger, querysets the serializers turn into them). The live cluster is
read through ``scheduler.preemption.runtime.get_cluster`` only (``cluster.py``).
"""
