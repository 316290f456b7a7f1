"""Models of the warden."""
