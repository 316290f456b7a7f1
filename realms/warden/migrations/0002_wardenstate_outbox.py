from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("warden", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="wardenstate",
            name="outbox",
            field=models.JSONField(
                default=list,
                help_text=(
                    "floor moves already chronicled, not yet made on the bus "
                    "(realms.warden.outbox)"
                ),
            ),
        ),
    ]
