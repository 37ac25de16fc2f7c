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
