"""Static files (the admin's stylesheets and scripts) in every mode, through WhiteNoise.

WhiteNoise reads them from the apps' static folders (``WHITENOISE_USE_FINDERS``), so
nobody runs ``collectstatic``; it warns about a ``STATIC_ROOT`` that nothing was collected
into, which is the normal case here and worth no line at every start.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from whitenoise.middleware import WhiteNoiseMiddleware  # type: ignore[import-untyped]


class StaticFilesMiddleware(WhiteNoiseMiddleware):  # type: ignore[misc]
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse], **kw: Any) -> None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"No directory at: ", category=UserWarning)
            super().__init__(get_response, **kw)


# Under ASGI, Django warns for every file WhiteNoise streams from a (synchronous) file
# object: a line per stylesheet in the operator's terminal, about a cost that is one
# thread hop per static file.
warnings.filterwarnings(
    "ignore",
    message=r"StreamingHttpResponse must consume synchronous iterators",
    category=Warning,
    module=r"django\.core\.handlers\.asgi",
)
