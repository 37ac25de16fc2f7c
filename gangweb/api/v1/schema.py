"""The OpenAPI 3 document (drf-spectacular): v1 only, with the problem answers every operation may give."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
ERRORS = {
    "400": "a parameter or the body is invalid (``errors`` names it)",
    "401": "no or bad credentials (WWW-Authenticate: Bearer, Basic)",
    "403": "your role or namespaces do not allow it",
    "404": "not found, or not yours to see",
    "429": "throttled (Retry-After)",
    "503": "the cluster cannot be read, or the database is not answering (Retry-After)",
}


def only_v1(endpoints, **kwargs):
    """Deprecated paths (``/api/requests/``...) stay out of the document."""
    return [e for e in endpoints if e[0].startswith("/api/v1/")]


NO_NUL = r"^[^\x00]*$"


def problems(result, generator, request, public):
    """Every operation: the problem+json answers, each with the ``Problem`` schema; and every free-text
    query parameter says it takes no NUL character (``gangweb/api/v1/filters.py`` refuses one)."""
    result.setdefault("components", {}).setdefault("schemas", {})
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                free = "pattern" not in schema and "enum" not in schema
                if parameter.get("in") == "query" and schema.get("type") == "string" and free:
                    schema["pattern"] = NO_NUL
            responses = operation.setdefault("responses", {})
            for code, text in ERRORS.items():
                answer = responses.setdefault(code, {"description": text})
                answer["content"] = {"application/problem+json": {"schema": PROBLEM_REF}}
            for code, answer in responses.items():
                if code.startswith(("4", "5")):
                    answer["content"] = {"application/problem+json": {"schema": PROBLEM_REF}}
                    answer.setdefault("description", ERRORS.get(code, "problem"))
    return result


class _Scheme(OpenApiAuthenticationExtension):
    """The document names each way in (``components.securitySchemes``), so clients and Swagger UI know
    which credentials an operation takes. Registered when this module loads (the hooks above)."""

    definition: dict = {}

    def get_security_definition(self, auto_schema):
        return self.definition


class GangwebTokenScheme(_Scheme):
    target_class = "gangweb.access.authentication.GangwebTokenAuthentication"
    name = "gangwebToken"
    definition = {
        "type": "http",
        "scheme": "bearer",
        "description": "a token printed by `manage.py access token USER` (gwt_...)",
    }


class KubernetesTokenScheme(_Scheme):
    target_class = "gangweb.access.authentication.KubernetesTokenAuthentication"
    name = "kubernetesToken"
    definition = {
        "type": "http",
        "scheme": "bearer",
        "description": "a Kubernetes token (service account or OIDC), checked with TokenReview; what it "
        "may see with SubjectAccessReview",
    }


class BasicScheme(_Scheme):
    target_class = "gangweb.access.authentication.BasicAuthentication"
    name = "basic"
    definition = {"type": "http", "scheme": "basic", "description": "a local user's name and password"}


class SessionScheme(_Scheme):
    target_class = "gangweb.access.authentication.SessionAuthentication"
    name = "session"
    definition = {
        "type": "apiKey",
        "in": "cookie",
        "name": "sessionid",
        "description": "the dashboard's sign-in; unsafe methods need the X-CSRFToken header",
    }
