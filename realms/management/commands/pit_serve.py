"""``pit_serve``: the embedded platform as a long-running server for the operator.

It starts what ``pit_up`` starts, serves the platform's app on ``--host``/``--port`` for a
browser and for scripts, and does a worker's part in the background: it recovers the
realms a previous run left live, provisions each realm ``POST /api/realms`` launches,
ticks every running realm, and moves the batches the API and the console start along.
It prints the URL that logs the operator in, then a line per phase, until Ctrl-C or
SIGTERM.
"""

from __future__ import annotations

import logging
import queue
import signal
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.db import close_old_connections, connections
from django.http.request import validate_host

from bearpit.auth import LOGIN_PATH, QUERY_TOKEN, api_token, ensure_operator
from bearpit.periodic import PeriodicThread
from bearpit.server import PlatformServer
from realms.batch.background import BatchDriver
from realms.embedded.platform import EmbeddedPlatform
from realms.management.foreground import ForegroundCommand
from realms.management.quiet import quiet_logs
from realms.models import Realm
from realms.preflight import port_in_use
from realms.services.provision import bring_up_realm
from realms.services.queue import close_local_worker, open_local_worker, pending_realm_ids
from realms.services.recovery import recover_realms
from realms.warden.watch import finish_concluding, tick_realm

log = logging.getLogger(__name__)

# An address that means "every interface" is no address to browse to: the printed URL
# names the loopback address of the same family, which BEARPIT_ALLOWED_HOSTS has.
_ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}  # noqa: S104


def bind_address(host: str) -> str:
    """``--host`` as a socket takes it: an IPv6 literal may come in brackets."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def url_host(host: str) -> str:
    """The host part of a URL to the server bound on ``host``."""
    address = bind_address(host)
    shown = _ANY_ADDRESS.get(address, address)
    return f"[{shown}]" if ":" in shown else shown


def login_url(host: str, port: int) -> str:
    return f"http://{url_host(host)}:{port}{LOGIN_PATH}?{QUERY_TOKEN}={api_token()}"


class Ticker(PeriodicThread):
    """A worker's beat in a thread: every tick period, one Warden tick per running realm,
    the teardown of each realm a tick ended, and a line for each realm that ended.

    It calls what the ``warden.tick`` and ``warden.conclude`` tasks call, as the
    foreground driver does, through the same claims: a worker that also ticks a realm
    (with a broker) never ticks it at the same time."""

    name = "realm-ticker"

    def __init__(self, period_s: float, say: Callable[[str], None]) -> None:
        super().__init__(period_s)
        self._say = say
        self._live: set[str] = set()

    def step(self) -> None:
        self._tick_all()

    def _tick_all(self) -> None:
        running = Realm.objects.filter(state=Realm.State.RUNNING).values_list("realm_id", flat=True)
        for realm_id in running:
            if self.stopping:
                return
            try:
                ticked = tick_realm(realm_id)
                if ticked is not None and ticked.concluded is not None:
                    finish_concluding(realm_id)
            except Exception:
                log.exception("ticking %s failed", realm_id)
        self._report_ended()

    def _report_ended(self) -> None:
        live = set(
            Realm.objects.exclude(state__in=Realm.TERMINAL_STATES).values_list(
                "realm_id", flat=True
            )
        )
        ended = Realm.objects.filter(realm_id__in=self._live - live).order_by("realm_id")
        for realm in ended:
            self._say(f"{realm.state}: {realm.realm_id} — {realm.conclusion_detail}")
        self._live = live


class Provisioner:
    """The worker's other half: provisions, in a thread of its own, each realm the API
    launched in this process (what the ``realms.provision`` task does behind a broker).

    Provisioning takes many seconds; on its own thread it never holds up the Ticker, so
    realms already running keep their beat. A realm still pending when it stops is picked
    up at the next start; the API refuses to launch once the hand-off is closed."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._stop = threading.Event()
        self._inbox = open_local_worker()
        self._thread = threading.Thread(target=self._run, name="realm-provisioner", daemon=True)

    def start(self) -> Provisioner:
        # Realms the API launched before the last stop, never provisioned: theirs now.
        for realm_id in pending_realm_ids():
            self._inbox.put(realm_id)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    realm_id = self._inbox.get(timeout=0.5)
                except queue.Empty:
                    continue
                close_old_connections()
                self._provision(realm_id)
        finally:
            connections.close_all()

    def _provision(self, realm_id: str) -> None:
        self._say(f"provision: {realm_id} (launched through the API)")
        try:
            state = bring_up_realm(realm_id)
        except Exception:
            log.exception("provisioning %s failed", realm_id)
            return
        if state is not None:
            self._say(f"{state}: {realm_id}")

    def stop(self, timeout_s: float = 60.0) -> None:
        close_local_worker()
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)


class Command(ForegroundCommand):
    help = (
        "Serve the platform for the operator: start the embedded platform, serve the web "
        "app (the admin, the API) on --host/--port, recover realms a previous run left live "
        "and tick every running realm in the background. Prints the URL that logs a browser "
        "in as the operator (a Django superuser, created on first start). Ctrl-C or SIGTERM "
        "stops serving and the platform cleanly, exit 0; realms still running are left as "
        "they are, for the next start (or pit up PATH --realm ID) to recover."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--host",
            default="127.0.0.1",
            help="address to serve on (0.0.0.0 or :: for every address; :: takes IPv4 too)",
        )
        parser.add_argument("--port", type=int, default=8000, help="port to serve on")
        parser.add_argument("--print-url", action="store_true", help="print the login URL and exit")

    def handle(self, *args: Any, **options: Any) -> None:
        host = bind_address(options["host"])
        port: int = options["port"]
        if not 0 < port < 65536:
            raise CommandError(f"--port {port}: expected a port from 1 to 65535")
        if options["print_url"]:
            self.stdout.write(login_url(host, port))
            return
        quiet_logs(options["verbosity"])
        if options["verbosity"] < 2:
            # A request for a host not in ALLOWED_HOSTS gets its 400; a traceback in the
            # operator's terminal for every such probe says nothing more.
            logging.getLogger("django.security.DisallowedHost").setLevel(logging.CRITICAL)
        if port == settings.BEARPIT_PLATFORM_PORT and settings.BEARPIT_MATRIX_URL is None:
            raise CommandError(
                f"--port {port} is BEARPIT_PLATFORM_PORT, where the embedded platform takes "
                "the homeserver's pushes: pass another --port, or set BEARPIT_PLATFORM_PORT"
            )
        if port_in_use(port, host or "0.0.0.0"):  # noqa: S104 - as the server will bind
            raise CommandError(
                f"port {port} on {host} is already in use: stop what listens there, "
                "or pass --port with a free port"
            )
        stopping = threading.Event()
        previous = {
            signum: signal.signal(signum, lambda *_: stopping.set())
            for signum in (signal.SIGINT, signal.SIGTERM)
        }
        platform = EmbeddedPlatform(self.say)
        server: PlatformServer | None = None
        ticker: Ticker | None = None
        provisioner: Provisioner | None = None
        batches: BatchDriver | None = None
        try:
            self.say("start: database, homeserver, gateway, realmtools")
            if not self.start_platform(platform):
                return
            operator = ensure_operator()
            self.say(f"operator: {operator.get_username()} (superuser; /admin/ takes its session)")
            recovered = recover_realms(force=True)
            for realm_id, outcome in sorted(recovered.items()):
                self.say(f"recover: {realm_id} {outcome}")
            try:
                server = PlatformServer(port, host=host).start()
            except RuntimeError as exc:
                raise CommandError(str(exc).splitlines()[0]) from exc
            ticker = Ticker(settings.BEARPIT_TICK_SECONDS, self.say).start()
            provisioner = Provisioner(self.say).start()
            batches = BatchDriver(settings.BEARPIT_TICK_SECONDS, self.say).start()
            shown = url_host(host)
            self.say(f"serve: http://{shown}:{server.port}/ (the admin /admin/, the API /api/)")
            if not validate_host(shown, settings.ALLOWED_HOSTS):
                self.say(f"note: {shown} is not in BEARPIT_ALLOWED_HOSTS, which refuses it")
            self.say(f"login: {login_url(host, server.port)}")
            while not stopping.wait(0.5):  # a short wait, so the signal handler gets a turn
                pass
            self.say("stopping: realms still running are left for the next start to recover")
        finally:
            if batches is not None:
                batches.stop()
            if provisioner is not None:
                provisioner.stop()
            if ticker is not None:
                ticker.stop()
            if server is not None:
                server.stop()
            platform.stop()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        self.say("stopped")
