"""Queueing a library scenario for a worker: every refusal says why and starts nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bearpit.celery import app as celery_app
from realms.library import services as library
from realms.models import Realm
from realms.services.launch import LaunchOptions
from realms.services.queue import QueueRefused, active_realms, queue_realm
from tests.conftest import REPO
from tests.fixtures.realms import RealmBuilder

pytestmark = pytest.mark.django_db
app: Any = celery_app


@pytest.fixture
def with_workers() -> Iterator[None]:
    """An installation that has a broker; every case here is refused before it is used."""
    saved = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = saved


def refusal(package: str, options: LaunchOptions, capacity: int = 5) -> QueueRefused:
    with pytest.raises(QueueRefused) as caught:
        queue_realm(package, options, capacity=capacity)
    return caught.value


def test_without_a_broker_nothing_is_launched() -> None:
    library.import_folder(REPO / "examples" / "toolcheck")
    refused = refusal("toolcheck", LaunchOptions())
    assert refused.status == 503 and "pit_up" in str(refused)
    assert not Realm.objects.exists()


@pytest.mark.usefixtures("with_workers")
def test_a_taken_id_a_full_installation_and_an_unknown_package_are_refused(
    realm_builder: RealmBuilder,
) -> None:
    library.import_folder(REPO / "examples" / "toolcheck")
    realm_builder("taken-one", state=Realm.State.RUNNING)
    realm_builder("over-one", state=Realm.State.ARCHIVED)
    assert active_realms() == 1  # a concluded realm holds no place
    assert refusal("toolcheck", LaunchOptions(realm_id="taken-one")).status == 409
    assert refusal("toolcheck", LaunchOptions(), capacity=1).status == 429
    assert refusal("ghost", LaunchOptions()).status == 404
    assert Realm.objects.count() == 2
