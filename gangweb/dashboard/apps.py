from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "gangweb.dashboard"
    label = "dashboard"
    verbose_name = "gangweb dashboard"
