from django.apps import AppConfig


class WardenConfig(AppConfig):
    name = "realms.warden"
    label = "warden"
    verbose_name = "Warden"
