"""DRF authentication: gangweb tokens, Kubernetes tokens, Basic and session (docs/design.md, "Access").

``Authorization: Bearer gwt_...`` is a gangweb token (``manage.py access token``); any other bearer token
shaped like a Kubernetes token is handed to TokenReview (``gangweb.access.kube``), and anything else is a
401 without one. Settings list the token classes first in
``REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]``: DRF answers 401 with the first class's challenge,
which offers both schemes, ``Bearer`` and ``Basic``. Session authentication (the dashboard's browser
calls) comes last and enforces CSRF on unsafe methods. Wrong passwords (Basic) and tokens the API server
does not authenticate are counted per source (``gangweb.access.throttle``): past the back-off, the answer
is 429 with ``Retry-After``.
"""

from __future__ import annotations

from rest_framework import authentication, exceptions

from gangweb.access import kube, passwords, throttle, tokens
from scheduler.preemption import actors

REALM = "gangweb"
CHALLENGE = f'Bearer realm="{REALM}", Basic realm="{REALM}"'


def bearer_token(request) -> str | None:
    """The token of an ``Authorization: Bearer`` header, None without one; 401 when malformed."""
    parts = authentication.get_authorization_header(request).split()
    if not parts or parts[0].lower() != b"bearer":
        return None
    if len(parts) != 2:
        raise exceptions.AuthenticationFailed("Authorization: Bearer takes exactly one token")
    try:
        return parts[1].decode("ascii")
    except UnicodeDecodeError:
        raise exceptions.AuthenticationFailed("the bearer token is not ASCII") from None


class ReviewsUnavailable(exceptions.APIException):
    """The Kubernetes API server did not answer a TokenReview: no verdict on the credentials (503)."""

    status_code = 503
    default_code = "kubernetes_unavailable"


class GangwebTokenAuthentication(authentication.BaseAuthentication):
    """A token printed by ``manage.py access token``: its user, if the token is neither expired nor revoked."""

    def authenticate(self, request):
        token = bearer_token(request)
        if token is None or not tokens.is_gangweb_token(token):
            return None
        user = tokens.user_for(token)
        if user is None:
            raise exceptions.AuthenticationFailed("invalid, expired or revoked gangweb token")
        user.gangweb_actor_kind = actors.TOKEN  # the ledger says "token:<user>", not "local:<user>"
        return user, token

    def authenticate_header(self, request) -> str:
        return CHALLENGE


class KubernetesTokenAuthentication(authentication.BaseAuthentication):
    """A Kubernetes bearer token (service account or OIDC), checked with TokenReview; its scope comes
    from SubjectAccessReviews (``request.user.scope``)."""

    def authenticate(self, request):
        token = bearer_token(request)
        if token is None or tokens.is_gangweb_token(token):
            return None
        if not kube.is_kubernetes_token(token):
            raise exceptions.AuthenticationFailed(
                "neither a gangweb token nor shaped like a Kubernetes token (a JWT, a bootstrap or an EKS token)"
            )
        try:
            identity = kube.review_token(token, throttle.source_of(request))
        except throttle.Refused as refused:
            raise exceptions.Throttled(
                refused.retry_after, "too many bearer tokens from this address that did not authenticate."
            ) from None
        except kube.NoKubernetesApi:  # a simulated cluster: no API server could vouch for it
            raise exceptions.AuthenticationFailed(
                "not a gangweb token, and gangweb runs on no Kubernetes API server to review it with"
            ) from None
        except kube.ReviewUnavailable as exc:
            raise ReviewsUnavailable(f"cannot check the Kubernetes token: {exc}") from exc
        if identity is None:
            raise exceptions.AuthenticationFailed(
                "the Kubernetes API server does not authenticate this token"
            )
        return kube.KubernetesUser(identity), identity

    def authenticate_header(self, request) -> str:
        return CHALLENGE


class BasicAuthentication(authentication.BasicAuthentication):
    """A local user's name and password; refused with 429 while the guessing back-off holds them."""

    www_authenticate_realm = REALM

    def authenticate_credentials(self, userid, password, request=None):
        try:
            return super().authenticate_credentials(userid, password, request)
        except exceptions.AuthenticationFailed:
            refused = passwords.refusal(request)
            if refused is None:
                raise
            raise exceptions.Throttled(
                refused.retry_after, "too many wrong passwords for this account or from this address."
            ) from None

    def authenticate_header(self, request) -> str:
        return CHALLENGE


class SessionAuthentication(authentication.SessionAuthentication):
    """The dashboard's own calls: the session cookie, CSRF enforced on unsafe methods (DRF's rule)."""


DEFAULT_AUTHENTICATION_CLASSES = [
    "gangweb.access.authentication.GangwebTokenAuthentication",
    "gangweb.access.authentication.KubernetesTokenAuthentication",
    "gangweb.access.authentication.BasicAuthentication",
    "gangweb.access.authentication.SessionAuthentication",
]
