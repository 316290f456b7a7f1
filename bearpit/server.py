"""The platform's ASGI app on uvicorn in a background thread.

The embedded default and the tests use it; production runs daphne or uvicorn as
its own process. The homeserver pushes application-service transactions here, so
the port is chosen before the registration is written.
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn


class PlatformServer:
    def __init__(self, port: int = 0, *, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout: float = 20.0) -> PlatformServer:
        """Start serving; return once the socket accepts connections."""
        if self._thread is not None:
            raise RuntimeError("the platform server is already running")
        from bearpit.asgi import application

        # IPPROTO_TCP, not 0: asyncio only sets TCP_NODELAY on sockets that say they are
        # TCP, and without it every response waits on the peer's delayed ACK (~40 ms).
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            # "::" takes IPv4 too (127.0.0.1 still answers), whatever the host's default.
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise RuntimeError(
                f"cannot serve the platform on {self.url.removeprefix('http://')}: {exc.strerror} "
                "(stop what listens there, or set BEARPIT_PLATFORM_PORT to a free port)"
            ) from exc
        self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(application, lifespan="off", log_level="warning", access_log=False)
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="platform-server", daemon=True
        )
        self._server, self._thread = server, thread
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the platform server did not start on {self.url}")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, finish in-flight requests, and join the thread."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(timeout)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout)

    def __enter__(self) -> PlatformServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
