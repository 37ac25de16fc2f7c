"""The dashboard's sign-in and sign-out (``/login/``, ``POST /logout/``), for every active user.

Django's own views with gangweb's page: CSRF on both, ``?next=`` honoured only for this site's paths.
Signing out ends the session's open websockets (``gangweb.access.signals``).
"""

from __future__ import annotations

from django.contrib.auth import views as auth_views


class SignInView(auth_views.LoginView):
    template_name = "access/login.html"
    redirect_authenticated_user = True


class SignOutView(auth_views.LogoutView):
    """POST only (Django's rule: a link or a prefetch must not sign anyone out)."""

    next_page = "/login/"
