"""The admin, registered on first use rather than when Django starts.

Django's own admin app imports every app's ``admin`` module in ``ready()``; ours pull in
the ledger's services and pydantic, about a third of a second a command spends before it
does anything. Here the site imports them the first time anything reads its registry
(its URLs, a request, the system checks), so a command that never touches the admin
never pays for it, and everything that does sees the same site Django's app would build.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import SimpleAdminConfig
from django.utils.module_loading import autodiscover_modules


class LazyAdminSite(admin.AdminSite):
    site_header = "Bearpit"
    site_title = "Bearpit"
    # The header links to the console itself ("Console"), so no second "View site" link.
    site_url = None
    _discovered = False

    @property
    def _registry(self) -> dict[Any, Any]:
        if not self._discovered:
            # Set first: each admin module registers through this property.
            self._discovered = True
            autodiscover_modules("admin", register_to=self)
        return self._models

    @_registry.setter
    def _registry(self, value: dict[Any, Any]) -> None:
        self._models = value


class AdminConfig(SimpleAdminConfig):
    """Django's admin app with the discovery moved from start-up to first use."""

    default_site = "bearpit.adminsite.LazyAdminSite"
