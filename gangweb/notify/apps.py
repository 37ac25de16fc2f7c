from django.apps import AppConfig


class NotifyConfig(AppConfig):
    name = "gangweb.notify"
    label = "notify"
    verbose_name = "notifications"
    default_auto_field = "django.db.models.BigAutoField"
