from django.apps import AppConfig


class AdmissionConfig(AppConfig):
    name = "admission"
    verbose_name = "gangweb admission webhook"
