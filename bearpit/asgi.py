"""ASGI entry point: HTTP through Django, websockets through Channels routing."""

from __future__ import annotations

import os

from django.apps import apps
from django.core.asgi import get_asgi_application
from django.core.handlers.asgi import ASGIHandler

from bearpit.startup import settings_or_exit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bearpit.settings")
settings_or_exit("bearpit.asgi")

# Imported by a process that has set Django up already (the embedded platform, a command):
# setting it up again would apply settings.LOGGING anew over the levels that process chose.
django_asgi = ASGIHandler() if apps.ready else get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from bearpit.bodylimit import BodyLimit  # noqa: E402
from bearpit.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": BodyLimit(django_asgi, lambda: int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)),
        # The operator's session signs a websocket in; a page of another origin cannot
        # ride on it (the browser sends the cookie, so the Origin is what tells).
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
