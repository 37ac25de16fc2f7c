"""A notice reaches the victims' teams as well as the preemptor's: in the live feed (cut to the reader) and
through a tenant's notification route, with the other team's names taken out."""

from __future__ import annotations

import json

from gangweb.access.scope import VIEWER, Scope
from gangweb.clusterview import scoping
from gangweb.notify.models import Sink
from gangweb.notify.outbox import cut

PAYLOAD = {
    "request": 7,
    "podGroup": "team-llm/pretrain",
    "plan": 9,
    "units": ["PodGroup research/train-0009", "Pod batch/solo"],
    "noticeGivenAt": "2026-12-02T05:00:00+00:00",
    "noticeDeadline": "2026-12-02T05:05:00+00:00",
}


def test_a_victims_team_sees_its_notice_in_the_feed_without_the_preemptors_name():
    message = {"type": "notice.given", "topic": "ledger", "seq": 3, "payload": PAYLOAD}
    cut_for_research = scoping.cut_message(message, Scope(user="r", per_namespace={"research": VIEWER}))
    assert cut_for_research is not None
    assert cut_for_research["payload"]["noticeDeadline"] == PAYLOAD["noticeDeadline"]
    assert "research/train-0009" in json.dumps(cut_for_research)
    assert "team-llm" not in json.dumps(cut_for_research) and "batch/solo" not in json.dumps(cut_for_research)
    assert scoping.cut_message(message, Scope(user="o", per_namespace={"other": VIEWER})) is None


def test_a_victims_tenant_route_receives_the_notice():
    sink = Sink(name="research", kind="slack", url="https://hooks.example/x", namespaces=["research"])
    body = cut(sink, "notice.given", PAYLOAD)
    assert body is not None and "team-llm" not in json.dumps(body)
    assert (
        cut(
            Sink(name="o", kind="slack", url="https://hooks.example/y", namespaces=["other"]),
            "notice.given",
            PAYLOAD,
        )
        is None
    )
