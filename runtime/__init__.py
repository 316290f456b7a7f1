"""Bearpit's agent runtime: the loop every agent runs inside its sandbox.

It imports nothing from the platform (no Django); the platform talks to it only through the
birth config file, the model gateway, the bus and MCP.
"""

__version__ = "0.1.0"
