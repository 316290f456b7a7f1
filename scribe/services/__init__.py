"""Scribe's services: sessions, the draft, the conversation with the model, approval."""
