"""The provider profiles a fresh installation starts with (prices are a snapshot, editable).

``offline`` is the scripted provider. Its prices are nominal, not real: they are small and
non-zero so that caps, reservations and spend events behave exactly as with a paid provider.
"""

from __future__ import annotations

from typing import Any

_GPT = {
    "small": {
        "model": "gpt-5.4-mini",
        "effort": None,
        "input_cost_per_token": 7.5e-07,
        "output_cost_per_token": 4.5e-06,
        "context_length": 400_000,
    },
    "medium": {
        "model": "gpt-5.4",
        "effort": None,
        "input_cost_per_token": 2.5e-06,
        "output_cost_per_token": 1.5e-05,
        "context_length": 1_050_000,
    },
    "large": {
        "model": "gpt-5.4-pro",
        "effort": None,
        "input_cost_per_token": 3e-05,
        "output_cost_per_token": 1.8e-04,
        "context_length": 1_050_000,
    },
}

SEED_PROFILES: list[dict[str, Any]] = [
    {
        "name": "azure",
        "label": "Azure OpenAI",
        "description": "OpenAI models deployed on Azure (the default).",
        "transport": "litellm",
        "litellm_provider": "azure",
        "api_key_ref": "azure-main",
        "setup_hint": "pit_keys add azure-main --provider azure --api-base "
        "https://<resource>.openai.azure.com",
        "categories": _GPT,
    },
    {
        "name": "openai",
        "label": "OpenAI",
        "description": "OpenAI's own API.",
        "transport": "openai",
        "api_base": "https://api.openai.com/v1",
        "api_key_ref": "openai-main",
        "setup_hint": "pit_keys add openai-main --provider openai",
        "categories": _GPT,
    },
    {
        "name": "anthropic",
        "label": "Anthropic",
        "description": "Claude models through Anthropic's API.",
        "transport": "litellm",
        "litellm_provider": "anthropic",
        "api_key_ref": "anthropic-main",
        "setup_hint": "pit_keys add anthropic-main --provider anthropic",
        "categories": {
            "small": {
                "model": "claude-haiku-4-5",
                "effort": "low",
                "input_cost_per_token": 1e-06,
                "output_cost_per_token": 5e-06,
                "context_length": 200_000,
            },
            "medium": {
                "model": "claude-sonnet-5",
                "effort": "medium",
                "input_cost_per_token": 2e-06,
                "output_cost_per_token": 1e-05,
                "context_length": 1_000_000,
            },
            "large": {
                "model": "claude-opus-5",
                "effort": "high",
                "input_cost_per_token": 5e-06,
                "output_cost_per_token": 2.5e-05,
                "context_length": 1_000_000,
            },
        },
    },
    {
        "name": "openrouter",
        "label": "OpenRouter",
        "description": "Many vendors' models through OpenRouter's OpenAI-compatible API.",
        "transport": "openai",
        "api_base": "https://openrouter.ai/api/v1",
        "api_key_ref": "openrouter-main",
        "setup_hint": "pit_keys add openrouter-main --provider openrouter",
        "categories": {
            "small": {
                "model": "anthropic/claude-haiku-4.5",
                "effort": "low",
                "input_cost_per_token": 1e-06,
                "output_cost_per_token": 5e-06,
                "context_length": 200_000,
            },
            "medium": {
                "model": "anthropic/claude-sonnet-5",
                "effort": "medium",
                "input_cost_per_token": 2e-06,
                "output_cost_per_token": 1e-05,
                "context_length": 1_000_000,
            },
            "large": {
                "model": "openai/gpt-5.4",
                "effort": None,
                "input_cost_per_token": 2.5e-06,
                "output_cost_per_token": 1.5e-05,
                "context_length": 1_050_000,
            },
        },
    },
    {
        "name": "local",
        "label": "Local (OpenAI-compatible)",
        "description": "A model server on this machine, such as Ollama or vLLM; no key.",
        "transport": "openai",
        "api_base": "http://127.0.0.1:11434/v1",
        "api_key_ref": "",
        "setup_hint": "Start the server, then point the profile's api_base at its /v1 URL.",
        "flat_rate": True,
        "categories": {
            tier: {
                "model": model,
                "effort": None,
                "input_cost_per_token": 1e-09,
                "output_cost_per_token": 1e-09,
                "context_length": 32_768,
            }
            for tier, model in (
                ("small", "qwen3:4b"),
                ("medium", "qwen3:8b"),
                ("large", "qwen3:32b"),
            )
        },
        "min_budget_usd": "1",
    },
    {
        "name": "offline",
        "label": "Offline (scripted)",
        "description": "The scripted provider: deterministic replies from each agent's script. "
        "Prices are nominal so that metering and caps are exercised.",
        "transport": "scripted",
        "api_key_ref": "",
        "categories": {
            "small": {
                "model": "scripted-small",
                "effort": None,
                "input_cost_per_token": 1e-07,
                "output_cost_per_token": 4e-07,
                "context_length": 128_000,
            },
            "medium": {
                "model": "scripted-medium",
                "effort": None,
                "input_cost_per_token": 1e-06,
                "output_cost_per_token": 4e-06,
                "context_length": 128_000,
            },
            "large": {
                "model": "scripted-large",
                "effort": None,
                "input_cost_per_token": 5e-06,
                "output_cost_per_token": 2e-05,
                "context_length": 128_000,
            },
        },
    },
]
