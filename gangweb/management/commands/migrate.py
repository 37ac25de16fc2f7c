"""Django's ``migrate``, one at a time per database: on PostgreSQL it first takes a session advisory lock.

deploy/ runs beat as two replicas and each runs the migrations in its init container; two ``migrate`` runs at
once would both try to create the same tables and one would fail half-way. With the lock the second waits,
then finds nothing left to apply.
"""

from __future__ import annotations

from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connections

# pg_advisory_lock's key: any constant of gangweb's own ("gangweb" in ASCII, truncated to 64 bits).
LOCK_KEY = 0x67616E67776562


class Command(DjangoMigrate):
    def handle(self, *args, **options):
        connection = connections[options["database"]]
        if connection.vendor != "postgresql":
            return super().handle(*args, **options)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        try:
            return super().handle(*args, **options)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
