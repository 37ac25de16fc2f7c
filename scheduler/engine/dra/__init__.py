"""DRA devices (``resource.k8s.io/v1``): typed objects, CEL selectors, devices as capacity, extended
resources, shared pools and PodGroup-level claims, plus the builders of their real shapes.

Built by the snapshot only when it holds DRA objects. The planning core reaches this package through
four doors only (``snapshot``, ``typed_objects``, ``preemptor``, ``policies.base``; a contract in
pyproject.toml), and it never imports the entry point, the policies or the caching.
"""
