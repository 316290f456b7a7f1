"""Console pages, a module per page."""
