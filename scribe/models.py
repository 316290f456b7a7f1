"""Scribe keeps no tables yet."""
