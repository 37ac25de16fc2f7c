"""Who reads and who acts: every v1 view is cut to its reader's ``Scope`` (gangweb/access/scope.py).

``scope_of(request)`` is the one way a view finds it: ``scope_for`` of whoever the authentication classes
found (a gangweb token's, a Basic login's or a session's local user, a Kubernetes identity checked by
review), kept for the rest of the request. In the demo, an anonymous reader is the demo's reader, as it is
on the pages (``scope.DEMO_READER``).
"""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.permissions import BasePermission

from gangweb.access.scope import Scope, scope_for


def scope_of(request) -> Scope:
    cached = getattr(request, "_gangweb_scope", None)
    if cached is not None:
        return cached
    scope = scope_for(request)
    request._gangweb_scope = scope
    return scope


def _signed_in(request) -> bool:
    user = getattr(request, "user", None)
    return bool(getattr(user, "is_authenticated", False))


class Reads(BasePermission):
    """A reader with a role somewhere; what it sees is cut by ``scope_of`` in every query."""

    message = "your account has no role in any namespace"

    def has_permission(self, request, view) -> bool:
        scope = scope_of(request)
        if scope.authenticated:
            return True
        if not _signed_in(request):
            raise exceptions.NotAuthenticated()
        return False


class SignedIn(Reads):
    """A signed-in reader with a role somewhere, even in the demo (POSTs that cost an engine run)."""

    def has_permission(self, request, view) -> bool:
        if not _signed_in(request):
            raise exceptions.NotAuthenticated()
        return super().has_permission(request, view)
