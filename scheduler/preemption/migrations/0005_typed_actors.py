"""Who decided a request becomes a typed identity (scheduler/preemption/actors.py).

Rows written before this migration named a person without a kind. What can be told is marked: gangweb's
own expiries, Kubernetes service accounts (``system:serviceaccount:...``) and other names with a colon
(local usernames cannot hold one) are Kubernetes identities; every other name is ``unknown``, because a
local user and a Kubernetes user of that name were written alike. The history entries' ``data.by``
becomes the same ``{"kind", "name"}`` object.
"""

from django.db import migrations, models

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


def classify(name: str, state: str) -> tuple[str, str]:
    if name == "gangweb" and state == "expired":
        return "gangweb", name
    if name.startswith(SERVICE_ACCOUNT_PREFIX):
        namespace, _, account = name[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
        if namespace and account:
            return "k8s-sa", f"{namespace}/{account}"
    if ":" in name:
        return "k8s-user", name
    return "unknown", name


def mark(apps, schema_editor):
    Request = apps.get_model("scheduler", "PreemptionRequest")
    Entry = apps.get_model("scheduler", "LedgerEntry")
    for request in Request.objects.exclude(decided_by="").filter(decided_by_kind="").iterator():
        kind, name = classify(request.decided_by, request.state)
        Request.objects.filter(pk=request.pk).update(decided_by_kind=kind, decided_by=name)
    # The history is append-only for the pipeline; this rewrites the shape of one field, never a fact.
    for entry in Entry.objects.filter(data__has_key="by").iterator():
        by = entry.data.get("by")
        if isinstance(by, str):
            kind, name = classify(by, "expired" if entry.kind == "request.expired" else "")
            Entry.objects.filter(pk=entry.pk).update(data={**entry.data, "by": {"kind": kind, "name": name}})


class Migration(migrations.Migration):
    dependencies = [("scheduler", "0004_plan_resource_versions")]

    operations = [
        migrations.AddField(
            model_name="preemptionrequest",
            name="decided_by_kind",
            field=models.CharField(blank=True, default="", max_length=16),
        ),
        migrations.RunPython(mark, migrations.RunPython.noop),
    ]
