"""Record, replay and fork: a realm's model calls on file, answered again in order."""
