"""Passwords behind the guessing back-off (``gangweb.access.throttle``).

``/login/``, Basic on the API and the admin site all check a password through Django's
``authenticate()``, so its one backend is where each check is counted: a refused attempt raises before
ModelBackend's hash, which is deliberately slow (PBKDF2) and would otherwise spend the CPU the other
users need. The refusal is kept on the request (``refusal``) so that the caller can answer 429 with
``Retry-After`` instead of "wrong password".
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied

from gangweb.access import throttle

_REFUSAL = "gangweb_password_refusal"


class PasswordBackend(ModelBackend):
    """ModelBackend, with each password check charged to its account and its source first."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        if username is None or password is None:
            return None
        try:
            attempt = throttle.password_attempt(request, str(username))
        except throttle.Refused as refused:
            if request is not None:
                setattr(request, _REFUSAL, refused)
            raise PermissionDenied(str(refused)) from None  # authenticate() tries no other backend
        try:
            user = super().authenticate(request, username=username, password=password, **kwargs)
        except BaseException:  # no verdict (the database did not answer): the attempt is not counted
            attempt.refund()
            raise
        if user is None:
            attempt.fail()
        else:
            attempt.refund()
        return user

    async def aauthenticate(self, request, username=None, password=None, **kwargs):
        return await sync_to_async(self.authenticate)(request, username, password, **kwargs)


def refusal(request) -> throttle.Refused | None:
    """Why ``authenticate()`` found no user for ``request``, when it was the back-off and not the password."""
    return getattr(request, _REFUSAL, None)
