from django.apps import AppConfig


class ScribeConfig(AppConfig):
    name = "scribe"
    verbose_name = "Scribe"
