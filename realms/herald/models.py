"""Models of the herald."""
