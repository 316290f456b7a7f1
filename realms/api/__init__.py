"""The HTTP API's realm routes and the control-plane token shared by every ``/api/*`` view."""
