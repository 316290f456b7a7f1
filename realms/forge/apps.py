from django.apps import AppConfig


class ForgeConfig(AppConfig):
    name = "realms.forge"
    label = "forge"
    verbose_name = "Forge"
