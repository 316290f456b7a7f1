"""Who is calling, and the realm they call in; plus the per-realm write lock."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import transaction

from realms.models import Realm
from realms.realmtools.errors import Refusal
from realms.realmtools.facts import RealmFacts
from realms.realmtools.identity import Identity


@dataclass(frozen=True)
class Caller:
    identity: Identity
    facts: RealmFacts

    @property
    def agent_id(self) -> str:
        return self.identity.agent_id

    @property
    def realm_id(self) -> str:
        return self.identity.realm_id

    @property
    def is_referee(self) -> bool:
        return self.identity.is_referee


@contextmanager
def realm_lock(realm_id: str) -> Iterator[None]:
    """One writer per realm: a transaction holding the Realm row.

    On PostgreSQL the row lock serialises writers across processes; SQLite takes
    its write lock when the (IMMEDIATE) transaction begins, which is stronger.
    """
    with transaction.atomic():
        rows = Realm.objects.select_for_update().filter(realm_id=realm_id).values_list("pk")
        if not list(rows):
            raise Refusal(f"realm {realm_id} does not exist")
        yield
