"""DRF's browsable API, sent with the policy its templates need (``gangweb/security.py``)."""

from __future__ import annotations

from rest_framework import renderers

from gangweb.security import API_HTML_POLICY, HEADER


class BrowsableAPIRenderer(renderers.BrowsableAPIRenderer):
    """DRF's HTML view of an answer; its templates carry inline styles, so its page gets ``API_HTML_POLICY``."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        page = super().render(data, accepted_media_type, renderer_context)
        response = (renderer_context or {}).get("response")
        if response is not None:
            response.headers[HEADER] = API_HTML_POLICY
        return page
