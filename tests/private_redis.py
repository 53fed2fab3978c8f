"""A private, throwaway ``redis-server`` for tests that need a whole Redis to themselves.

The Redis on 6379 is shared by every suite running on the machine at the same time, so a test that
runs ``FLUSHDB``, reads db-wide keys (Celery's ``unacked`` hash) or otherwise owns more than its own
key prefix starts this instead: ``redis-server`` on a free loopback port, with no persistence, in a
temporary folder that ``stop()`` removes. The ``private_redis`` fixture (``tests/conftest.py``)
starts one per test. Every flush in the suite goes through ``flush_owned``, which refuses a server
this process did not start: a harness handed the shared Redis's URL fails instead of wiping it.

Example::

    server = PrivateRedis.start()
    try:
        broker = server.url(1)          # redis://127.0.0.1:<port>/1
        flush_owned(server.client(1))   # wipes nobody else's data
    finally:
        server.stop()
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import redis
from ports import free_port

_OWNED_PORTS: set[int] = set()
"""Ports of the servers this process started and has not stopped."""


def flush_owned(client: redis.Redis) -> None:
    """``FLUSHDB`` on ``client``'s database, only if its server is a ``PrivateRedis`` of this process."""
    kwargs = client.connection_pool.connection_kwargs
    port = int(kwargs.get("port", 0))
    if kwargs.get("host") not in ("127.0.0.1", "localhost") or port not in _OWNED_PORTS:
        raise AssertionError(f"refusing FLUSHDB on {kwargs.get('host')}:{port}: not a private redis-server "
                             "of this test process (use the private_redis fixture)")
    client.flushdb()


class RedisUnavailable(RuntimeError):
    """``redis-server`` is missing or would not start (the fixture skips, or fails under CI)."""


class PrivateRedis:
    """One ``redis-server`` process owned by whoever started it."""

    def __init__(self, root: Path, port: int, proc: subprocess.Popen[bytes]) -> None:
        self.root = root
        self.port = port
        self.proc = proc

    @classmethod
    def start(cls, binary: str = "redis-server", timeout: float = 20.0) -> PrivateRedis:
        """Start a server on a free port and wait until it answers PING."""
        path = shutil.which(binary)
        if path is None:
            raise RedisUnavailable(f"{binary} not found on PATH; install the Redis server package")
        root = Path(tempfile.mkdtemp(prefix="lunora-redis-"))
        last = ""
        for _ in range(5):  # another process may take the probed port before the server binds it
            port = free_port()
            log = root / "redis.log"
            server = cls(root, port, _spawn(path, port, root))
            if server._wait_ready(timeout):
                _OWNED_PORTS.add(port)
                return server
            last = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            server._terminate()
        shutil.rmtree(root, ignore_errors=True)
        raise RedisUnavailable(f"redis-server did not start:\n{last}")

    def url(self, db: int = 0) -> str:
        """The URL of database ``db`` on this server."""
        return f"redis://127.0.0.1:{self.port}/{db}"

    def client(self, db: int = 0, *, decode_responses: bool = False) -> redis.Redis:
        """A redis-py client on database ``db``."""
        return redis.Redis.from_url(self.url(db), decode_responses=decode_responses)

    def pause(self) -> None:
        """Stop the server process (an outage); ``resume`` starts it again on the same port."""
        self._terminate()

    def resume(self, timeout: float = 20.0) -> None:
        """Start the server again on its port after ``pause``, empty (it keeps no data on disk)."""
        path = shutil.which("redis-server")
        if path is None:
            raise RedisUnavailable("redis-server not found on PATH")
        self.proc = _spawn(path, self.port, self.root)
        if not self._wait_ready(timeout):
            raise RedisUnavailable(f"redis-server did not come back on port {self.port}")

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        _OWNED_PORTS.discard(self.port)
        self._terminate()
        shutil.rmtree(self.root, ignore_errors=True)

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=1)
        try:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    return False
                with contextlib.suppress(redis.ConnectionError):
                    if client.ping():
                        return True
                time.sleep(0.05)
            return False
        finally:
            client.close()

    def _terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _spawn(path: str, port: int, root: Path) -> subprocess.Popen[bytes]:
    """``redis-server`` on loopback ``port``, no persistence, its log in ``root``."""
    return subprocess.Popen(
        [path, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(root), "--save", "",
         "--appendonly", "no", "--databases", "16", "--logfile", str(root / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
