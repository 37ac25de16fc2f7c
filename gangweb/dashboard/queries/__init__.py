"""The dashboard's data, as plain functions of a reader's scope: the pages' JSON endpoints call them,
and the API v1 can serve the same (``gangweb/dashboard/api.py`` lists which page reads which)."""
