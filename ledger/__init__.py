"""The Ledger: provider keys, provider profiles, virtual keys, spend and the model gateway."""

import os

# LiteLLM fetches its price table from the internet on import unless told otherwise; the
# copy bundled with the package is what we meter with, and sandboxes have no network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
