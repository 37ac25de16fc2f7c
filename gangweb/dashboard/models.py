"""The dashboard's own rows: a bounded history of the GPU map's figures for the overview's chart."""

from django.db import models


class GpuSample(models.Model):
    """The map's figures at one moment. ``by_namespace`` holds ``{ns: [allocated, waiting GPUs]}`` so a
    reader who sees some namespaces only is charted from theirs (``gangweb/dashboard/history.py``)."""

    at = models.DateTimeField(db_index=True)
    gpus = models.IntegerField()
    allocated = models.IntegerField()
    free = models.IntegerField()
    waiting_gpus = models.IntegerField()
    waiting_gangs = models.IntegerField()
    by_namespace = models.JSONField(default=dict)

    class Meta:
        ordering = ["at"]


class IdleSample(models.Model):
    """Idle GPUs by cause over one sampling period ending at ``at`` (docs/idle.md "One figure"): ``rows``
    ``[[namespace, gang, cause, gpus]]`` (namespace and gang empty for the cluster's free GPUs), the
    activity source's state then (``ok``, ``partial``, ``unavailable``, ``missing``) and the GPUs whose
    activity named nothing gangweb knows (``unknown_gpus``, never counted idle)."""

    at = models.DateTimeField(db_index=True)
    seconds = models.FloatField()
    rows = models.JSONField(default=list)
    activity = models.CharField(max_length=16)
    detail = models.TextField(blank=True, default="")
    unknown_gpus = models.IntegerField(default=0)

    class Meta:
        ordering = ["at"]
