"""The settings routes of the HTTP API: providers, their tiers, keys, capacity, tools."""
