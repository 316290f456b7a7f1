"""Running the gateway on uvicorn, on TCP 127.0.0.1 and the Unix socket at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import uvicorn
import uvloop
from django.conf import settings

from ledger.gateway.app import Gateway, build_app
from ledger.services.orphans import release_orphans


class _QuietShutdown(logging.Filter):
    """Calls still waiting on an upstream when the gateway stops are cut off: their
    reservations are released by the books as for any failed call, so uvicorn's notice
    and a traceback per cut-off call tell the operator nothing. One line says it instead."""

    def __init__(self) -> None:
        super().__init__()
        self.stopping = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.stopping:
            return True
        if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
            return False
        message = str(record.msg)
        if "timeout graceful shutdown exceeded" in message:
            logging.getLogger("ledger.gateway").info(
                "stopping: calls still waiting on their upstream were cut off"
            )
            return False
        return True


class _Server(uvicorn.Server):
    """uvicorn's server, telling the shutdown filter when a signal (``pit_gateway``) stops it."""

    def __init__(self, config: uvicorn.Config, quiet: _QuietShutdown) -> None:
        super().__init__(config)
        self._quiet = quiet

    def handle_exit(self, sig: int, frame: object) -> None:
        self._quiet.stopping = True
        super().handle_exit(sig, frame)  # type: ignore[arg-type]


def default_socket_path() -> Path:
    return Path(settings.BEARPIT_HOME) / "run" / "gateway.sock"


class GatewayServer:
    """The gateway on a Unix socket and/or a TCP port (0 = any free port).

    ``start()`` serves from a background thread and returns once it accepts connections;
    ``run()`` serves in the calling thread until SIGINT/SIGTERM (``pit_gateway``).
    """

    def __init__(
        self,
        uds_path: Path | None = None,
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        upstream_timeout: float | None = None,
        db_threads: int | None = None,
        max_body_bytes: int | None = None,
    ) -> None:
        if uds_path is None and port is None:
            raise ValueError("GatewayServer needs a Unix socket path, a TCP port, or both")
        self.uds_path = uds_path
        self.host = host
        self.port = port
        self._timeout = upstream_timeout
        self._db_threads = db_threads
        self._max_body = max_body_bytes
        self._thread: threading.Thread | None = None
        self._server: uvicorn.Server | None = None
        self._quiet = _QuietShutdown()
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        """Base URL of the OpenAI API (``…/v1``); over the socket the host name is nominal."""
        if self.port is not None:
            return f"http://{self.host}:{self.port}/v1"
        return "http://gateway/v1"

    def _sockets(self) -> list[socket.socket]:
        socks: list[socket.socket] = []
        if self.port is not None:
            # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that say
            # so, and without it every response waits out the client's delayed ACK (~40 ms).
            tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tcp.bind((self.host, self.port))
            self.port = tcp.getsockname()[1]
            socks.append(tcp)
        if self.uds_path is not None:
            self.uds_path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                self.uds_path.unlink()
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.bind(str(self.uds_path))
            # Sandboxed agents run under their own uids and must be able to connect.
            os.chmod(self.uds_path, 0o666)  # noqa: S103 - the socket is the sandbox's only door
            socks.append(unix)
        for s in socks:
            s.listen(2048)
            s.setblocking(False)
        return socks

    async def _serve(self) -> None:
        gateway = Gateway(
            upstream_timeout=self._timeout,
            db_threads=self._db_threads,
            max_body_bytes=self._max_body,
        )
        # Before the first call: reservations a killed gateway of this host left behind
        # can never settle, and would hold caps and teardowns for good.
        await gateway.db(release_orphans)
        config = uvicorn.Config(
            build_app(gateway),
            http="httptools",
            lifespan="off",
            log_level="warning",
            access_log=False,
            # Nothing in front of the gateway may speak for a caller: no forwarded headers.
            proxy_headers=False,
            timeout_keep_alive=30,
            timeout_graceful_shutdown=5,
        )
        server = _Server(config, self._quiet)
        self._server = server
        socks = self._sockets()
        watcher = asyncio.create_task(self._watch_started(server))
        try:
            # uvicorn installs signal handlers only when serving from the main thread.
            await server.serve(sockets=socks)
        finally:
            watcher.cancel()
            await gateway.aclose()
            for s in socks:
                s.close()
            if self.uds_path is not None:
                with contextlib.suppress(FileNotFoundError):
                    self.uds_path.unlink()

    async def _watch_started(self, server: uvicorn.Server) -> None:
        while not server.started:
            await asyncio.sleep(0.01)
        self._ready.set()

    def _thread_main(self) -> None:
        try:
            with (
                self._quiet_when_stopping(),
                asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
            ):
                runner.run(self._serve())
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()

    @contextlib.contextmanager
    def _quiet_when_stopping(self) -> Iterator[None]:
        # Until the loop is gone: the calls cut off at shutdown log as their tasks unwind,
        # which is after uvicorn's serve() has returned.
        uvicorn_log = logging.getLogger("uvicorn.error")
        uvicorn_log.addFilter(self._quiet)
        try:
            yield
        finally:
            uvicorn_log.removeFilter(self._quiet)

    def start(self, timeout: float = 30.0) -> GatewayServer:
        self._thread = threading.Thread(
            target=self._thread_main, name="ledger-gateway", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("the gateway did not start in time")
        if self._error is not None:
            raise RuntimeError(f"the gateway failed to start: {self._error}") from self._error
        return self

    def stop(self, timeout: float = 15.0) -> None:
        if self._server is not None:
            self._quiet.stopping = True
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def run(self) -> None:
        with (
            self._quiet_when_stopping(),
            asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
        ):
            runner.run(self._serve())
