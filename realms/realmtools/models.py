"""Models of the realmtools."""
