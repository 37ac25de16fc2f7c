"""The API's JSON parser: DRF's, with a body larger than Django reads into memory refused (413) before it
is read, and one nested past the interpreter's recursion limit refused as any other malformed JSON (a 400
naming it), never a crash. (``simulate/`` hands its large bodies to the snapshot worker instead.)"""

from __future__ import annotations

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import APIException, ParseError


class TooLarge(APIException):
    status_code = 413
    default_detail = "request too large"


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        cap = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        length = int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
        if cap is not None and length > cap:
            raise TooLarge(f"the JSON body is larger than the {cap:,} bytes read into memory")
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body nests too deeply") from None
