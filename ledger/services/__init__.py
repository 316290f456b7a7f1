"""Ledger services: every state change of the Ledger goes through one function here."""
