"""Who may call the API: the dashboard's rule, applied to the read-only endpoints."""

from rest_framework.permissions import SAFE_METHODS, BasePermission

from gangweb.dashboard import live


class ReadableLikeTheDashboard(BasePermission):
    """Reads are open exactly when the dashboard page is (the demo); everything else needs a login.

    The rule itself is ``live.dashboard_is_public`` so the page, its websocket and the API can never
    disagree about who may look.
    """

    def has_permission(self, request, view) -> bool:
        if request.user and request.user.is_authenticated:
            return True
        return request.method in SAFE_METHODS and live.dashboard_is_public()
