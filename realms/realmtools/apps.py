from django.apps import AppConfig


class RealmtoolsConfig(AppConfig):
    name = "realms.realmtools"
    label = "realmtools"
    verbose_name = "Realmtools"
