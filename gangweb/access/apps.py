from django.apps import AppConfig


class AccessConfig(AppConfig):
    name = "gangweb.access"
    label = "access"
    verbose_name = "gangweb access"

    def ready(self) -> None:
        from gangweb.access import signals  # noqa: F401 (connects the session-ending receivers)
