"""Ledger models: credentials, provider profiles, virtual keys, spend.

Money is kept as whole nano-dollars (``*_nusd``, 1e-9 USD) in integer columns, so that
the cap check is one exact integer comparison on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

from django.db import models

NANO = 1_000_000_000


class Credential(models.Model):
    """A provider key the operator brought (BYOK), encrypted at rest.

    ``handle`` is the non-secret name scenarios refer to (``api_key_ref``).
    """

    handle = models.CharField(max_length=120, unique=True)
    provider = models.CharField(max_length=60)
    api_base = models.CharField(max_length=500, blank=True, default="")
    encrypted_key = models.BinaryField(blank=True, default=b"", editable=False)
    key_tail = models.CharField(
        max_length=8,
        blank=True,
        default="",
        editable=False,
        help_text="last characters, for recognition",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("handle",)

    def __str__(self) -> str:
        return self.handle

    @property
    def masked(self) -> str:
        return f"…{self.key_tail}" if self.key_tail else "(no key)"


class ProviderProfile(models.Model):
    """A named provider: how to reach it and which model each tier means."""

    class Transport(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible pass-through"
        LITELLM = "litellm", "LiteLLM provider translation"
        SCRIPTED = "scripted", "scripted provider (offline)"

    class Source(models.TextChoices):
        SEED = "seed", "seed"
        USER = "user", "user"

    name = models.CharField(max_length=60, unique=True)
    label = models.CharField(max_length=120, blank=True, default="")
    description = models.TextField(blank=True, default="")
    transport = models.CharField(max_length=16, choices=Transport.choices)
    litellm_provider = models.CharField(
        max_length=60, blank=True, default="", help_text="LiteLLM's provider prefix, e.g. anthropic"
    )
    api_base = models.CharField(max_length=500, blank=True, default="")
    api_key_ref = models.CharField(max_length=120, blank=True, default="")
    setup_hint = models.TextField(blank=True, default="")
    categories = models.JSONField(
        default=dict,
        help_text="{small|medium|large: {model, effort, input_cost_per_token, "
        "output_cost_per_token, context_length}}",
    )
    flat_rate = models.BooleanField(default=False)
    min_budget_usd = models.DecimalField(max_digits=16, decimal_places=8, null=True, blank=True)
    min_turn_seconds = models.FloatField(null=True, blank=True)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.USER)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name


class LedgerSetting(models.Model):
    """A platform-wide setting the operator changes at run time (e.g. the active provider)."""

    key = models.CharField(max_length=60, unique=True)
    value = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.key


class VirtualKey(models.Model):
    """The capped key one realm agent holds instead of a provider key."""

    key_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the secret")
    key_prefix = models.CharField(max_length=16, help_text="first characters, for recognition")
    realm_id = models.CharField(max_length=80, db_index=True)
    agent_id = models.CharField(max_length=64)
    provider = models.CharField(max_length=60)
    model = models.CharField(max_length=200)
    transport = models.CharField(max_length=16, choices=ProviderProfile.Transport.choices)
    litellm_provider = models.CharField(max_length=60, blank=True, default="")
    api_base = models.CharField(max_length=500, blank=True, default="")
    credential_handle = models.CharField(max_length=120, blank=True, default="")
    effort = models.CharField(max_length=12, blank=True, default="")
    context_length = models.PositiveIntegerField(null=True, blank=True)
    input_price = models.DecimalField(
        max_digits=24, decimal_places=18, null=True, blank=True, help_text="USD per input token"
    )
    output_price = models.DecimalField(
        max_digits=24, decimal_places=18, null=True, blank=True, help_text="USD per output token"
    )
    cap_nusd = models.BigIntegerField(null=True, blank=True, help_text="null = uncapped")
    base_nusd = models.BigIntegerField(
        default=0, help_text="spend of earlier keys of the same agent, counted against the cap"
    )
    spent_nusd = models.BigIntegerField(default=0)
    reserved_nusd = models.BigIntegerField(default=0)
    reserved_by = models.CharField(
        max_length=300, blank=True, default="", help_text="the gateway process that reserved last"
    )
    tokens_in = models.BigIntegerField(default=0)
    tokens_out = models.BigIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)
    on_exhausted = models.CharField(max_length=20, default="starve")
    script = models.TextField(blank=True, default="")
    script_cursor = models.PositiveIntegerField(default=0)
    refused_at = models.DateTimeField(
        null=True, blank=True, help_text="first time a call was refused for the cap"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=40, blank=True, default="")

    class Meta:
        ordering = ("realm_id", "agent_id", "id")
        indexes = [models.Index(fields=["realm_id", "agent_id"], name="vkey_realm_agent")]

    def __str__(self) -> str:
        return f"{self.key_prefix}… {self.realm_id}/{self.agent_id}"


class Spend(models.Model):
    """One metered model call."""

    class Outcome(models.TextChoices):
        OK = "ok", "ok"
        UPSTREAM_ERROR = "upstream_error", "upstream error"
        DISCONNECTED = "disconnected", "client disconnected"

    key = models.ForeignKey(VirtualKey, on_delete=models.CASCADE, related_name="spends")
    realm_id = models.CharField(max_length=80, db_index=True)
    agent_id = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cost_nusd = models.BigIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    streamed = models.BooleanField(default=False)
    ts_ms = models.BigIntegerField()

    class Meta:
        ordering = ("ts_ms", "id")

    def __str__(self) -> str:
        return f"{self.realm_id}/{self.agent_id} {self.cost_nusd}n$ {self.outcome}"
