"""Ledger models: credentials, provider profiles, virtual keys, spend."""
