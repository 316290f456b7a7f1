from django.apps import AppConfig


class HeraldConfig(AppConfig):
    name = "realms.herald"
    label = "herald"
    verbose_name = "Herald"
