"""The dashboard's sign-in and sign-out (``/login/``, ``POST /logout/``), for every active user.

Django's own views with gangweb's page: CSRF on both, ``?next=`` honoured only for this site's paths.
A sign-in refused by the guessing back-off (``gangweb.access.passwords``) is a 429 with ``Retry-After``
and says so on the form. Signing out ends the session's open websockets (``gangweb.access.signals``).
"""

from __future__ import annotations

from django.contrib.auth import forms as auth_forms
from django.contrib.auth import views as auth_views
from django.core.exceptions import ValidationError

from gangweb.access import passwords


class SignInForm(auth_forms.AuthenticationForm):
    retry_after: int | None = None

    def clean(self):
        try:
            return super().clean()
        except ValidationError:
            refused = passwords.refusal(self.request)
            if refused is None:
                raise
            self.retry_after = refused.retry_after
            raise ValidationError(
                "Too many failed sign-ins for this account or from this address: "
                f"try again in {refused.retry_after} s.",
                code="throttled",
            ) from None


class SignInView(auth_views.LoginView):
    template_name = "access/login.html"
    authentication_form = SignInForm
    redirect_authenticated_user = True

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.retry_after is not None:
            response.status_code = 429
            response["Retry-After"] = str(form.retry_after)
        return response


class SignOutView(auth_views.LogoutView):
    """POST only (Django's rule: a link or a prefetch must not sign anyone out)."""

    next_page = "/login/"
