"""Cost and duration forecasts of a package before it is launched."""
