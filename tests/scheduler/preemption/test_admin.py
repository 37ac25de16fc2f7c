"""The ledger is evidence: the Django admin shows it and refuses every write, to superusers too.

Each write is tried the way a browser would, through the admin's real URLs with the test client,
as a superuser: the change, add and delete pages and the changelist's bulk action. Every one is
refused and the ledger's rows are the same afterwards.
"""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.forms.models import model_to_dict
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from scheduler.preemption import ledger
from scheduler.preemption.models import (
    BrokenGang,
    Eviction,
    LedgerEntry,
    Plan,
    PreemptionRequest,
    RequestState,
)

pytestmark = pytest.mark.django_db

LEDGER_MODELS = list(apps.get_app_config("scheduler").get_models())


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.com", "pw")


@pytest.fixture
def root_client(client, superuser):
    client.force_login(superuser)
    return client


@pytest.fixture
def failed_request(planned_request):
    """A request the pipeline planned and then failed: the one an edit back to ``planned`` would revive."""
    request, plan = planned_request()
    ledger.finish(request.pk, RequestState.FAILED, "dry run refused: batch/low-0 429")
    request.refresh_from_db()
    assert request.state == RequestState.FAILED and plan.pod_evictions.exists()
    return request, plan


def ledger_rows() -> dict[str, list[dict]]:
    return {
        model.__name__: [model_to_dict(row) | {"pk": row.pk} for row in model.objects.order_by("pk")]
        for model in LEDGER_MODELS
    }


def url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def test_every_ledger_model_is_registered_view_only_for_superusers(superuser):
    assert {m.__name__ for m in LEDGER_MODELS} >= {"PreemptionRequest", "Plan", "Eviction", "LedgerEntry"}
    request = RequestFactory().get("/admin/")
    request.user = superuser
    for model in LEDGER_MODELS:
        model_admin = admin.site._registry[model]
        row = model.objects.first()
        assert model_admin.has_view_permission(request), model
        for obj in (None, row):
            assert not model_admin.has_change_permission(request, obj), model
            assert not model_admin.has_delete_permission(request, obj), model
        assert not model_admin.has_add_permission(request), model
        assert model_admin.get_actions(request) == {}, model
        for inline in model_admin.get_inline_instances(request):
            assert not inline.has_add_permission(request, None), inline
            assert not inline.has_change_permission(request, None), inline
            assert not inline.has_delete_permission(request, None), inline


def test_a_superuser_can_read_every_ledger_page(root_client, failed_request):
    request, plan = failed_request
    objects = {
        PreemptionRequest: request,
        Plan: plan,
        Eviction: plan.pod_evictions.first(),
        LedgerEntry: LedgerEntry.objects.filter(request=request).first(),
    }
    for model, obj in objects.items():
        listing = root_client.get(url(model, "changelist"))
        assert listing.status_code == 200, model
        assert 'name="action"' not in listing.content.decode()  # no bulk action offered
        page = root_client.get(url(model, "change", obj.pk))
        assert page.status_code == 200, model
        html = page.content.decode()
        assert 'name="_save"' not in html and "deletelink" not in html, model
    assert "dry run refused" in root_client.get(url(PreemptionRequest, "change", request.pk)).content.decode()


def test_a_superuser_cannot_turn_a_failed_request_back_into_planned(root_client, failed_request):
    request, plan = failed_request
    before = ledger_rows()
    # The whole form as the change page would post it, the inline's management form included.
    form = {
        **{k: v for k, v in model_to_dict(request).items() if v is not None},
        "state": RequestState.PLANNED,
        "reason": "",
        "plans-TOTAL_FORMS": "1",
        "plans-INITIAL_FORMS": "1",
        "plans-MIN_NUM_FORMS": "0",
        "plans-MAX_NUM_FORMS": "1000",
        "plans-0-id": str(plan.pk),
        "plans-0-request": str(request.pk),
        "_save": "Save",
    }
    response = root_client.post(url(PreemptionRequest, "change", request.pk), form)
    assert response.status_code == 403
    request.refresh_from_db()
    assert request.state == RequestState.FAILED
    assert ledger_rows() == before


@pytest.mark.parametrize("model", LEDGER_MODELS, ids=lambda m: m.__name__)
def test_a_superuser_cannot_change_add_or_delete_any_ledger_row(root_client, failed_request, model):
    request, plan = failed_request
    obj = {
        PreemptionRequest: request,
        Plan: plan,
        Eviction: plan.pod_evictions.first(),
        LedgerEntry: LedgerEntry.objects.filter(request=request).first(),
        BrokenGang: BrokenGang.objects.create(
            namespace="team-a", name="broken", held_gpus=8, since=timezone.now()
        ),
    }[model]
    before = ledger_rows()
    fields = {
        k: v for k, v in model_to_dict(obj).items() if v is not None and not isinstance(v, (list, dict))
    }

    changed = root_client.post(url(model, "change", obj.pk), {**fields, "_save": "Save"})
    added = root_client.post(url(model, "add"), {**fields, "_save": "Save"})
    deleted = root_client.post(url(model, "delete", obj.pk), {"post": "yes"})
    bulk = root_client.post(
        url(model, "changelist"), {"action": "delete_selected", "_selected_action": [obj.pk], "post": "yes"}
    )

    assert (changed.status_code, added.status_code, deleted.status_code) == (403, 403, 403)
    assert bulk.status_code in (200, 302, 403)  # whatever it answers, it deletes nothing
    assert ledger_rows() == before
    assert model.objects.filter(pk=obj.pk).exists()
