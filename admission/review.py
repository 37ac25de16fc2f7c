"""The ``admission.k8s.io/v1`` AdmissionReview envelope: strict parsing and exact responses.

Rules (kubernetes/api admission/v1/types.go; the apiserver's VerifyAdmissionResponse tests): the
response echoes ``apiVersion``/``kind`` and ``request.uid``; ``patchType`` only together with a
non-empty ``patch``; a validating webhook never returns a patch. A body that is not a well-formed
AdmissionReview is the caller's error: ``ReviewError`` carries the HTTP status (400, or 413 when
oversized) and a message, and never a traceback.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

import msgspec
import orjson

from admission.podview import Pod, PodViewError, pod_view

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
# Two objects of up to 3 MiB plus the envelope (controller-runtime's reasoning for its limit).
MAX_BODY_BYTES = 7 * 1024 * 1024
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
_KIND_MESSAGE = "request.kind must be an object with string group, version and kind"


class ReviewError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def body(self) -> bytes:
        """A ``metav1.Status``-shaped JSON error, the form Kubernetes clients already print."""
        reason = "RequestEntityTooLarge" if self.status == 413 else "BadRequest"
        status = {
            "apiVersion": "v1",
            "kind": "Status",
            "status": "Failure",
            "reason": reason,
            "code": self.status,
            "message": self.message,
        }
        return orjson.dumps(status)


# Per-request value objects are msgspec Structs: their constructor is C (a slots dataclass's __init__ is
# Python and cost more than the rest of the envelope checks). gc=False: they hold strings, views and
# JSON dicts, never themselves, so they cannot be part of a cycle. Treat them as read-only.
class AdmissionRequest(msgspec.Struct, gc=False):
    uid: str
    group: str
    version: str
    kind: str
    operation: str
    namespace: str
    name: str
    # The objects as JSON dicts, for every kind but core/v1 Pod, whose rules read ``pod``/``old_pod``.
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    dry_run: bool
    pod: Pod | None = None
    old_pod: Pod | None = None

    @property
    def is_pod(self) -> bool:
        return self.kind == "Pod" and self.group == ""

    def object_name(self, generated_mark: str = "") -> str:
        """The object's name, or its ``generateName`` + ``generated_mark`` while the API server has yet
        to pick one."""
        pod = self.pod or self.old_pod
        if pod is not None:
            name, generate_name = pod.metadata.name, pod.metadata.generateName
        else:
            metadata = (self.object or self.old_object or {}).get("metadata")
            metadata = metadata if metadata.__class__ is dict else {}
            name, generate_name = metadata.get("name"), metadata.get("generateName")
        if name and name.__class__ is str:
            return name
        if self.name:
            return self.name
        return generate_name + generated_mark if generate_name and generate_name.__class__ is str else ""


def _optional_text(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if value is None:
        return ""
    if value.__class__ is not str:
        raise ReviewError(400, f"request.{key} must be a string")
    return value


class _GroupVersionKind(msgspec.Struct, gc=False):
    kind: str
    version: str
    group: str = ""


class _UserInfo(msgspec.Struct, gc=False):
    """Read by no rule; typed only so that a userInfo that is not an object is refused on both paths."""


class _PodRequest(msgspec.Struct, gc=False):
    uid: str
    kind: _GroupVersionKind
    operation: str
    namespace: str = ""
    name: str = ""
    object: Pod | None = None
    oldObject: Pod | None = None
    dryRun: bool = False
    userInfo: _UserInfo | None = None


class _PodReview(msgspec.Struct, gc=False):
    apiVersion: str
    kind: str
    request: _PodRequest


_decode_pod_review = msgspec.json.Decoder(_PodReview).decode


def parse_review(body: bytes, max_bytes: int = MAX_BODY_BYTES) -> AdmissionRequest:
    """Parse and check one AdmissionReview request body; raise ``ReviewError`` if it is not one.

    Pod reviews, nearly all of the traffic, decode straight into the typed pod views: whatever the
    rules do not read is skipped unbuilt. Anything else, and anything the fast path does not accept,
    goes through the generic parser, which has the precise messages for malformed bodies. The fast
    path takes ASCII bodies only: msgspec does not check the UTF-8 of the values it skips.
    """
    if len(body) > max_bytes:
        raise ReviewError(413, f"request body is {len(body)} bytes; the limit is {max_bytes}")
    if not body:
        raise ReviewError(400, "empty request body; expected an admission.k8s.io/v1 AdmissionReview")
    if body.isascii():
        try:
            review = _decode_pod_review(body)
        except (msgspec.DecodeError, RecursionError):
            pass
        else:
            request = review.request
            kind = request.kind
            if (
                kind.kind == "Pod"
                and kind.group == ""
                and review.apiVersion == API_VERSION
                and review.kind == KIND
                and request.uid
                and request.operation in OPERATIONS
                and (request.object is not None or request.operation == "DELETE")
            ):
                return AdmissionRequest(
                    request.uid,
                    "",
                    kind.version,
                    "Pod",
                    request.operation,
                    request.namespace,
                    request.name,
                    None,
                    None,
                    request.dryRun,
                    request.object,
                    request.oldObject,
                )
    return _parse_generic(body)


# ``x.__class__ is dict`` rather than ``isinstance``: orjson only ever builds exact dicts, lists and
# strs. Messages are built only on failure.
def _parse_generic(body: bytes) -> AdmissionRequest:
    try:
        # orjson rejects invalid UTF-8, lone surrogates and nesting deeper than 1024 levels.
        review = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise ReviewError(400, f"request body is not UTF-8 JSON: {str(error)[:200]}") from None
    if review.__class__ is not dict:
        raise ReviewError(400, "request body must be a JSON object (an AdmissionReview)")
    get = review.get
    if get("apiVersion") != API_VERSION or get("kind") != KIND:
        raise ReviewError(
            400,
            f"expected apiVersion {API_VERSION} and kind {KIND}, "
            f"got {str(get('apiVersion'))[:60]!r} and {str(get('kind'))[:60]!r}",
        )
    request = get("request")
    if request.__class__ is not dict:
        raise ReviewError(400, "AdmissionReview has no request object")
    get = request.get
    uid = get("uid")
    if uid.__class__ is not str or not uid:
        raise ReviewError(400, "request.uid must be a non-empty string")
    kind = get("kind")
    if kind.__class__ is not dict:
        raise ReviewError(400, _KIND_MESSAGE)
    group, version, kind_name = kind.get("group", ""), kind.get("version"), kind.get("kind")
    if (
        group.__class__ is not str
        or version.__class__ is not str
        or kind_name.__class__ is not str
        or not kind_name
    ):
        raise ReviewError(400, _KIND_MESSAGE)
    operation = get("operation")
    if operation.__class__ is not str or operation not in OPERATIONS:
        raise ReviewError(400, "request.operation must be one of CONNECT, CREATE, DELETE, UPDATE")
    obj = get("object")
    if obj.__class__ is not dict and not (obj is None and operation == "DELETE"):
        raise ReviewError(400, f"request.object must be an object for {operation}")
    old = get("oldObject")
    if old is not None and old.__class__ is not dict:
        raise ReviewError(400, "request.oldObject must be an object or null")
    dry_run = get("dryRun")
    if dry_run is not None and dry_run.__class__ is not bool:
        raise ReviewError(400, "request.dryRun must be a boolean")
    user_info = get("userInfo")
    if user_info is not None and user_info.__class__ is not dict:
        raise ReviewError(400, "request.userInfo must be an object")
    namespace = get("namespace")
    if namespace is None:
        namespace = ""
    elif namespace.__class__ is not str:
        raise ReviewError(400, "request.namespace must be a string")
    name = _optional_text(request, "name")
    if kind_name == "Pod" and group == "":
        return AdmissionRequest(
            uid,
            group,
            version,
            kind_name,
            operation,
            namespace,
            name,
            None,
            None,
            dry_run is True,
            _pod(obj, "object"),
            _pod(old, "oldObject"),
        )
    return AdmissionRequest(
        uid,
        group,
        version,
        kind_name,
        operation,
        namespace,
        name,
        obj or None,
        old or None,  # null, {} and missing all mean "no old object"
        dry_run is True,
    )


def _pod(obj: dict[str, Any] | None, field: str) -> Pod | None:
    if not obj:
        return None
    try:
        return pod_view(obj)
    except PodViewError as error:
        raise ReviewError(
            400, f"request.{field} is not a valid Pod: {str(error).replace('$', 'request.' + field)}"
        ) from None


def encode_patch(operations: list[dict[str, Any]]) -> str:
    return base64.b64encode(orjson.dumps(operations)).decode("ascii")


_HEAD = b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":'
_PATCHED = b',"allowed":true,"patchType":"JSONPatch","patch":"'


def build_response(
    uid: str,
    *,
    allowed: bool = True,
    patch: list[dict[str, Any]] | None = None,
    message: str = "",
    code: int = 403,
    warnings: list[str] | None = None,
    encoded_patch: bytes = b"",
) -> bytes:
    """The serialized AdmissionReview response. ``patch`` (or the same already through
    ``encode_patch``, as ASCII bytes: ``encoded_patch``) is only for the mutating webhook."""
    if allowed and not warnings:
        # The answer to nearly every request: assembled from bytes (orjson escapes the uid).
        if patch and not encoded_patch:
            encoded_patch = encode_patch(patch).encode("ascii")
        if not encoded_patch:
            return b"".join((_HEAD, orjson.dumps(uid), b',"allowed":true}}'))
        return b"".join((_HEAD, orjson.dumps(uid), _PATCHED, encoded_patch, b'"}}'))
    if encoded_patch and not patch:
        patch = orjson.loads(base64.b64decode(encoded_patch))
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = encode_patch(patch)
    if not allowed:
        response["status"] = {
            "code": code,
            "reason": "Forbidden" if code == 403 else "BadRequest",
            "message": message,
        }
    if warnings:
        response["warnings"] = warnings
    return orjson.dumps({"apiVersion": API_VERSION, "kind": KIND, "response": response})


def review_for(pod: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview the API server sends for a Job controller creating ``pod`` (the bench's load and
    the demo's own pods are reviewed through it, as a real cluster's would be)."""
    metadata = pod["metadata"]
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": metadata.get("name", ""),
            "namespace": metadata.get("namespace", "default"),
            "operation": "CREATE",
            "userInfo": {
                "username": "system:serviceaccount:kube-system:job-controller",
                "uid": str(uuid.uuid4()),
                "groups": [
                    "system:serviceaccounts",
                    "system:serviceaccounts:kube-system",
                    "system:authenticated",
                ],
            },
            "object": pod,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }
