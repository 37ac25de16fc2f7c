from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scheduler", "0002_plan_outcome")]

    operations = [
        migrations.AddField(
            model_name="plan",
            name="resource_versions",
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
