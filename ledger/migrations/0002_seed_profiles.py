from django.db import migrations


def seed(apps, schema_editor):
    from ledger.seed import SEED_PROFILES

    Profile = apps.get_model("ledger", "ProviderProfile")
    for spec in SEED_PROFILES:
        data = dict(spec)
        name = data.pop("name")
        Profile.objects.update_or_create(name=name, defaults={**data, "source": "seed"})


def unseed(apps, schema_editor):
    Profile = apps.get_model("ledger", "ProviderProfile")
    Profile.objects.filter(source="seed").delete()


class Migration(migrations.Migration):
    dependencies = [("ledger", "0001_initial")]

    operations = [migrations.RunPython(seed, unseed)]
