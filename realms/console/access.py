"""Who may see a console page: the operator's session, and nobody else.

A browser without the session gets a page that says how to sign in (the login URL
``pit serve`` prints), never a redirect to the admin's password form: the operator has
no password to type.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from bearpit.auth import is_operator, token_path

View = Callable[..., HttpResponse]


def signed_out(request: HttpRequest) -> HttpResponse:
    response = render(request, "console/signed_out.html", {"token_path": token_path()}, status=403)
    response["Cache-Control"] = "no-store"
    return response


def operator_required(view: View) -> View:
    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not is_operator(getattr(request, "user", None)):
            return signed_out(request)
        response = view(request, *args, **kwargs)
        # Pages show live state and the operator's data: never cached, never framed.
        response.setdefault("Cache-Control", "no-store")
        return response

    return guarded
