"""The model gateway: an OpenAI-compatible endpoint that authenticates, caps and meters."""
