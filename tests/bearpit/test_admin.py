"""The admin for everything: every page renders for the operator over a realm with
agents, events, messages, keys and spend; none answers an anonymous visitor; none shows a
secret; nothing in the Chronicle can be changed or deleted through it; the realm list
costs the same few queries however many realms it lists."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from decimal import Decimal

import pytest
from django.contrib import admin
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chronicle.kinds import Kind
from chronicle.models import Event, Message
from chronicle.services import record_event
from ledger.models import Credential, Spend, VirtualKey
from ledger.services.credentials import add_credential
from ledger.services.keys import mint_virtual_key
from ledger.services.profiles import seed_profiles
from realms.forge.models import Sandbox
from realms.herald.models import BusRealm, BusRoom, BusUser
from realms.models import Realm, Scenario, ScenarioFile
from realms.services.launch import LaunchOptions, launch_realm
from tests.conftest import REPO

pytestmark = [pytest.mark.timeout(120), pytest.mark.django_db]

TOKEN = "test-operator-token-admin-0123456789"
PROVIDER_KEY = "sk-planted-provider-key-must-never-show-0123456789"
BUS_TOKEN = "syt_planted_bus_token_must_never_show"
TOOLCHECK = REPO / "examples" / "toolcheck"
_uids = itertools.count(300_000)  # each sandbox row its own host uid, as leases give them


@dataclass
class Built:
    realm: Realm
    virtual_secrets: list[str]

    @property
    def secrets(self) -> list[str]:
        return [PROVIDER_KEY, BUS_TOKEN, TOKEN, *self.virtual_secrets]


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path
    settings.BEARPIT_API_TOKEN = TOKEN
    settings.DEBUG = False


def build(realm_id: str = "toolcheck-admin1") -> Built:
    """A realm as a run leaves it: agents, Chronicle rows, keys, spend, bus and sandboxes."""
    realm = launch_realm(TOOLCHECK, LaunchOptions(realm_id=realm_id))
    scenario = Scenario.objects.create(name=f"toolcheck-{realm_id}", valid=True)
    ScenarioFile.objects.create(scenario=scenario, path="project.json", content=b"{}")
    Realm.objects.filter(pk=realm.pk).update(scenario=scenario, state=Realm.State.RUNNING)
    record_event(realm_id, Kind.LIFECYCLE, {"event": "running"})
    bus = BusRealm.objects.create(
        realm_id=realm_id, system_user_id="@bp_system:x", operator_user_id="@op:x"
    )
    BusRoom.objects.create(bus=bus, room_id=f"!commons-{realm_id}:x", kind="commons")
    secrets: list[str] = []
    for position, agent in enumerate(realm.agents.all()):
        key, secret = mint_virtual_key(
            realm_id=realm_id,
            agent_id=agent.agent_id,
            provider=agent.provider,
            model=agent.model,
            cap_usd=Decimal("1"),
            on_exhausted="starve",
        )
        secrets.append(secret)
        Spend.objects.create(
            key=key,
            realm_id=realm_id,
            agent_id=agent.agent_id,
            model=agent.model,
            tokens_in=10,
            tokens_out=5,
            cost_nusd=1234,
            outcome=Spend.Outcome.OK,
            ts_ms=1_000 + position,
        )
        Message.objects.create(
            realm_id=realm_id,
            channel="!commons:x",
            sender=f"@bp_{realm_id}={agent.agent_id}:x",
            sender_agent=agent.agent_id,
            body=f"hello from {agent.agent_id}",
            ts_ms=2_000 + position,
            matrix_event_id=f"$ev-{realm_id}-{position}",
        )
        BusUser.objects.create(
            bus=bus,
            agent_id=agent.agent_id,
            user_id=f"@bp_{realm_id}={agent.agent_id}:x",
            token_encrypted=BUS_TOKEN,
            position=position,
        )
        Sandbox.objects.create(
            realm_id=realm_id,
            agent_id=agent.agent_id,
            backend="process",
            host_uid=next(_uids),
            host_gid=1,
        )
    return Built(Realm.objects.get(pk=realm.pk), secrets)


@pytest.fixture
def built() -> Built:
    seed_profiles()
    if not Credential.objects.filter(handle="planted").exists():
        add_credential(handle="planted", provider="openai", api_key=PROVIDER_KEY)
    return build()


@pytest.fixture
def operator() -> Client:
    client = Client(enforce_csrf_checks=True)
    assert client.get(f"/login?token={TOKEN}").status_code == 303
    return client


def admin_pages() -> list[tuple[str, str]]:
    """(what, url) for every registered changelist and the change form of its first row."""
    pages = []
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        name = f"{meta.app_label}.{meta.model_name}"
        pages.append((name, reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")))
        first = model_admin.get_queryset(_request()).order_by("pk").first()
        if first is not None:
            url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[first.pk])
            pages.append((f"{name} #{first.pk}", url))
    return pages


def _request():
    from django.test import RequestFactory

    return RequestFactory().get("/admin/")


def assert_no_secret(text: str, built: Built, where: str) -> None:
    for secret in built.secrets:
        assert secret not in text, f"{where} shows a secret"


def test_every_page_renders_for_the_operator_and_shows_no_secret(operator, built):
    pages = admin_pages()
    names = {name for name, _ in pages}
    for needed in (
        "realms.realm",
        "realms.scenario",
        "ledger.credential",
        "ledger.providerprofile",
        "ledger.virtualkey",
        "ledger.spend",
        "chronicle.event",
        "chronicle.message",
        "warden.wardenstate",
        "herald.busrealm",
        "herald.bususer",
    ):
        assert f"{needed} #" in " ".join(names) + " ", f"no change form for {needed}"
    for name, url in pages:
        response = operator.get(url)
        assert response.status_code == 200, f"{name}: {url} answered {response.status_code}"
        assert_no_secret(response.content.decode(), built, name)


def test_the_realm_page_shows_its_agents_events_and_messages(operator, built):
    url = reverse("admin:realms_realm_change", args=[built.realm.pk])
    page = operator.get(url).content.decode()
    for agent in built.realm.agents.all():
        assert agent.agent_id in page
        assert f"hello from {agent.agent_id}" in page
    assert "running" in page
    events = f"/admin/chronicle/event/?realm_id={built.realm.realm_id}"
    assert events in page
    assert operator.get(events).status_code == 200


def test_the_provider_profile_page_shows_its_tiers(operator, built):
    from ledger.models import ProviderProfile

    profile = ProviderProfile.objects.exclude(categories={}).order_by("pk").first()
    assert profile is not None
    page = operator.get(reverse("admin:ledger_providerprofile_change", args=[profile.pk]))
    text = page.content.decode()
    for tier, spec in profile.categories.items():
        assert f"<td>{tier}</td>" in text
        assert str(spec["model"]) in text


def test_the_credential_page_shows_the_key_masked(operator, built):
    cred = Credential.objects.get(handle="planted")
    text = operator.get(reverse("admin:ledger_credential_change", args=[cred.pk])).content.decode()
    assert f"…{PROVIDER_KEY[-4:]}" in text
    assert PROVIDER_KEY not in text


def test_every_page_is_refused_anonymously(built):
    anonymous = Client()
    for name, url in admin_pages():
        response = anonymous.get(url)
        assert response.status_code == 302, f"{name}: {response.status_code}"
        assert response["Location"].startswith("/admin/login/")


def test_nothing_of_the_chronicle_can_be_changed_or_deleted(operator, built):
    request = _request()
    for model in (Event, Message, Realm, VirtualKey, Spend):
        model_admin = admin.site._registry[model]
        row = model.objects.order_by("pk").first()
        assert not model_admin.has_add_permission(request)
        assert not model_admin.has_change_permission(request, row)
        assert not model_admin.has_delete_permission(request, row)
    event = Event.objects.order_by("pk").first()
    assert event is not None
    csrf = operator.cookies["csrftoken"].value
    delete = operator.post(
        reverse("admin:chronicle_event_delete", args=[event.pk]),
        {"post": "yes", "csrfmiddlewaretoken": csrf},
    )
    assert delete.status_code == 403
    change = operator.post(
        reverse("admin:chronicle_event_change", args=[event.pk]),
        {"kind": "forged", "csrfmiddlewaretoken": csrf},
    )
    assert change.status_code == 403
    assert Event.objects.get(pk=event.pk).kind == event.kind


def test_the_stop_action_pulls_the_kill_switch(operator, built):
    listing = operator.get(reverse("admin:realms_realm_changelist")).content.decode()
    assert '<option value="stop">' in listing
    csrf = operator.cookies["csrftoken"].value
    response = operator.post(
        reverse("admin:realms_realm_changelist"),
        {"action": "stop", "_selected_action": [built.realm.pk], "csrfmiddlewaretoken": csrf},
    )
    assert response.status_code == 302
    assert Realm.objects.get(pk=built.realm.pk).stop_requested


def test_the_rotate_action_asks_for_the_new_key_and_rotates_it(operator, built):
    cred = Credential.objects.get(handle="planted")
    csrf = operator.cookies["csrftoken"].value
    url = reverse("admin:ledger_credential_changelist")
    chosen = {"action": "rotate", "_selected_action": [cred.pk], "csrfmiddlewaretoken": csrf}
    assert '<option value="rotate">' in operator.get(url).content.decode()
    form = operator.post(url, chosen)
    assert form.status_code == 200
    assert 'type="password"' in form.content.decode()
    new_key = "sk-rotated-provider-key-0123456789abcd"
    done = operator.post(url, {**chosen, "apply": "1", "api_key": new_key})
    assert done.status_code == 302
    rotated = Credential.objects.get(pk=cred.pk)
    assert rotated.key_tail == new_key[-4:] and rotated.rotated_at is not None
    listing = operator.get(url).content.decode()
    assert new_key not in listing and PROVIDER_KEY not in listing


def test_a_static_file_the_admin_links_is_served_without_debug(operator, built):
    page = operator.get("/admin/").content.decode()
    stylesheets = re.findall(r'href="(/static/[^"]+\.css)"', page)
    assert stylesheets
    for url in stylesheets:
        response = Client().get(url)
        assert response.status_code == 200, url
        body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
        assert body


def test_the_realm_list_costs_the_same_queries_for_one_realm_or_many(
    operator, built, django_assert_max_num_queries
):
    url = reverse("admin:realms_realm_changelist")
    with CaptureQueriesContext(connection) as one:
        assert operator.get(url).status_code == 200
    for n in range(2, 6):
        build(f"toolcheck-admin{n}")
    with django_assert_max_num_queries(len(one.captured_queries)):
        page = operator.get(url)
    assert page.status_code == 200
    assert page.content.decode().count("toolcheck-admin") >= 5


def test_no_changelist_costs_a_query_a_row(operator, built):
    urls = [url for name, url in admin_pages() if "#" not in name]

    def counts() -> dict[str, int]:
        found = {}
        for url in urls:
            with CaptureQueriesContext(connection) as queries:
                assert operator.get(url).status_code == 200
            found[url] = len(queries.captured_queries)
        return found

    one = counts()
    for n in range(2, 5):
        build(f"toolcheck-admin{n}")
    many = counts()
    assert {u: c for u, c in many.items() if c > one[u]} == {}


def test_every_model_of_the_platform_has_an_admin_page_or_an_inline() -> None:
    from django.apps import apps

    ours = ("realms", "herald", "forge", "realmtools", "warden", "ledger", "chronicle", "scribe")
    shown = set(admin.site._registry)
    for model_admin in admin.site._registry.values():
        shown |= {inline.model for inline in model_admin.inlines}
    missing = [
        f"{m._meta.app_label}.{m.__name__}"
        for m in apps.get_models()
        if m._meta.app_label in ours and m not in shown
    ]
    assert not missing, f"no admin page or inline for {missing}"
