from django.apps import AppConfig


class RealmsConfig(AppConfig):
    name = "realms"
    verbose_name = "Realms"
