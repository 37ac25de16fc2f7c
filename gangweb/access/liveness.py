"""Is a browser session still signed in, and as whom? Read from the session store, never from the copy
a websocket loaded when it connected (``gangweb/dashboard/consumers.py`` asks periodically)."""

from __future__ import annotations

from importlib import import_module

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.utils.crypto import constant_time_compare

from gangweb.access.grants import scope_of_user
from gangweb.access.scope import Scope


def session_scope(session_key: str | None) -> tuple[int, Scope] | None:
    """(user id, fresh scope) of a session that is still signed in, else None (signed out, expired,
    password changed, user deactivated or deleted)."""
    if not session_key:
        return None
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user_id = store.get(SESSION_KEY)
    if user_id is None or store.get(BACKEND_SESSION_KEY) not in settings.AUTHENTICATION_BACKENDS:
        return None
    user = get_user_model()._default_manager.filter(pk=user_id).select_related("gangweb_grant").first()
    if user is None or not user.is_active:
        return None
    if not constant_time_compare(store.get(HASH_SESSION_KEY) or "", user.get_session_auth_hash()):
        return None
    return user.pk, scope_of_user(user)
