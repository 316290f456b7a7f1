"""Models of the forge."""
