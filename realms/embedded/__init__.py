"""The embedded default: the platform in one process, and the driver that runs a realm
in the foreground (``pit_up``, ``pit_rerun``)."""
