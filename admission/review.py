"""The ``admission.k8s.io/v1`` AdmissionReview envelope: strict parsing and exact responses.

Rules (kubernetes/api admission/v1/types.go; the apiserver's VerifyAdmissionResponse tests): the
response echoes ``apiVersion``/``kind`` and ``request.uid``; ``patchType`` only together with a
non-empty ``patch``; a validating webhook never returns a patch. A body that is not a well-formed
AdmissionReview is the caller's error: ``ReviewError`` carries the HTTP status (400, or 413 when
oversized) and a message, and never a traceback.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
# Two objects of up to 3 MiB plus the envelope (controller-runtime's reasoning for its limit).
MAX_BODY_BYTES = 7 * 1024 * 1024
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})

# ensure_ascii: JSON may carry lone surrogates ("\\ud800"), which cannot be encoded as UTF-8.
_dumps = json.JSONEncoder(separators=(",", ":")).encode


class ReviewError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def body(self) -> bytes:
        """A ``metav1.Status``-shaped JSON error, the form Kubernetes clients already print."""
        reason = "RequestEntityTooLarge" if self.status == 413 else "BadRequest"
        status = {"apiVersion": "v1", "kind": "Status", "status": "Failure",
                  "reason": reason, "code": self.status, "message": self.message}  # fmt: skip
        return _dumps(status).encode()


@dataclass(frozen=True)
class AdmissionRequest:
    uid: str
    group: str
    version: str
    kind: str
    operation: str
    namespace: str
    name: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    dry_run: bool
    user: str


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ReviewError(400, message)


def _optional_text(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    _require(value is None or isinstance(value, str), f"request.{key} must be a string")
    return value or ""


def parse_review(body: bytes, max_bytes: int = MAX_BODY_BYTES) -> AdmissionRequest:
    """Parse and check one AdmissionReview request body; raise ``ReviewError`` if it is not one."""
    if len(body) > max_bytes:
        raise ReviewError(413, f"request body is {len(body)} bytes; the limit is {max_bytes}")
    _require(len(body) > 0, "empty request body; expected an admission.k8s.io/v1 AdmissionReview")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ReviewError(400, f"request body is not UTF-8 (byte {error.start})") from None
    try:
        review = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ReviewError(400, f"request body is not JSON: {str(error)[:200]}") from None
    _require(isinstance(review, dict), "request body must be a JSON object (an AdmissionReview)")
    _require(
        review.get("apiVersion") == API_VERSION and review.get("kind") == KIND,
        f"expected apiVersion {API_VERSION} and kind {KIND}, "
        f"got {str(review.get('apiVersion'))[:60]!r} and {str(review.get('kind'))[:60]!r}",
    )
    request = review.get("request")
    _require(isinstance(request, dict), "AdmissionReview has no request object")
    uid = request.get("uid")
    _require(isinstance(uid, str) and uid != "", "request.uid must be a non-empty string")
    kind = request.get("kind")
    _require(isinstance(kind, dict), "request.kind must be an object {group, version, kind}")
    group, version, kind_name = kind.get("group", ""), kind.get("version"), kind.get("kind")
    _require(
        isinstance(group, str) and isinstance(version, str) and isinstance(kind_name, str) and kind_name != "",
        "request.kind needs string group, version and kind",
    )
    operation = request.get("operation")
    _require(operation in OPERATIONS, f"request.operation must be one of {', '.join(sorted(OPERATIONS))}")
    obj = request.get("object")
    if operation == "DELETE":
        _require(obj is None or isinstance(obj, dict), "request.object must be an object or null")
    else:
        _require(isinstance(obj, dict), f"request.object must be an object for {operation}")
    old = request.get("oldObject")
    _require(old is None or isinstance(old, dict), "request.oldObject must be an object or null")
    dry_run = request.get("dryRun", False)
    _require(dry_run is None or isinstance(dry_run, bool), "request.dryRun must be a boolean")
    user_info = request.get("userInfo")
    _require(user_info is None or isinstance(user_info, dict), "request.userInfo must be an object")
    user = (user_info or {}).get("username")
    return AdmissionRequest(
        uid=uid,
        group=group,
        version=version,
        kind=kind_name,
        operation=operation,
        namespace=_optional_text(request, "namespace"),
        name=_optional_text(request, "name"),
        object=obj or None,
        old_object=old or None,  # null, {} and missing all mean "no old object"
        dry_run=bool(dry_run),
        user=user if isinstance(user, str) else "",
    )


def encode_patch(operations: list[dict[str, Any]]) -> str:
    return base64.b64encode(_dumps(operations).encode()).decode("ascii")


def build_response(
    uid: str,
    *,
    allowed: bool = True,
    patch: list[dict[str, Any]] | None = None,
    message: str = "",
    code: int = 403,
    warnings: list[str] | None = None,
) -> bytes:
    """The serialized AdmissionReview response. ``patch`` is only for the mutating webhook."""
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = encode_patch(patch)
    if not allowed:
        response["status"] = {"code": code, "reason": "Forbidden" if code == 403 else "BadRequest",
                              "message": message}  # fmt: skip
    if warnings:
        response["warnings"] = warnings
    return _dumps({"apiVersion": API_VERSION, "kind": KIND, "response": response}).encode()
