from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scheduler", "0003_approve_mode")]

    operations = [
        migrations.AddField(
            model_name="plan",
            name="resource_versions",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
