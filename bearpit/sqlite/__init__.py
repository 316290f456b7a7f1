"""Django's SQLite backend with what the Chronicle's append-only triggers need."""
