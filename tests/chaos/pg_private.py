"""A private, throwaway PostgreSQL server for tests that restart or crash their database.

The shared server on 5432 serves every other suite running at the same time, so a test that wants
to pull the database out from under a worker starts its own instance instead: ``initdb`` into a
temporary folder (as the ``postgres`` OS user when the test runs as root: initdb refuses root),
``pg_ctl start`` on a free loopback port with its socket in that folder and trust auth, then
``restart`` / ``stop`` / ``start`` it at will. ``destroy()`` stops it and removes the folder.

Example::

    pg = PrivatePostgres.create()
    try:
        url = pg.create_database("chaos")   # postgresql+psycopg://postgres@127.0.0.1:<port>/chaos
        pg.restart(mode="immediate")        # a crash: no checkpoint, WAL replayed on start
    finally:
        pg.destroy()
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import sqlalchemy as sa
from ports import free_port

SEARCH_DIRS = ("/usr/local/bin", *sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True))
OS_USER = "postgres"


class PostgresUnavailable(RuntimeError):
    """No usable ``initdb`` / ``pg_ctl`` on this machine (the caller skips with this message)."""


def find_binary(name: str) -> str:
    """The path of a PostgreSQL server binary, or raise ``PostgresUnavailable`` naming where we looked."""
    for folder in (*SEARCH_DIRS, *os.environ.get("PATH", "").split(os.pathsep)):
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise PostgresUnavailable(
        f"{name} not found in {SEARCH_DIRS} or PATH; install the PostgreSQL server package"
    )


class PrivatePostgres:
    """One PostgreSQL instance owned by the test that created it."""

    def __init__(self, root: Path, port: int, as_user: str | None) -> None:
        self.root = root
        self.data = root / "data"
        self.port = port
        self.as_user = as_user
        self.log = root / "server.log"
        self.pg_ctl = find_binary("pg_ctl")

    @classmethod
    def create(cls) -> PrivatePostgres:
        """``initdb`` a fresh cluster (trust auth) and start it on a free port."""
        initdb = find_binary("initdb")
        as_user = OS_USER if os.geteuid() == 0 else None
        root = Path(tempfile.mkdtemp(prefix="lunora-pg-"))
        if as_user is not None:
            try:
                entry = pwd.getpwnam(as_user)
            except KeyError as exc:
                shutil.rmtree(root, ignore_errors=True)
                raise PostgresUnavailable(
                    "running as root and there is no 'postgres' OS user to run initdb as"
                ) from exc
            os.chown(root, entry.pw_uid, entry.pw_gid)
        server = cls(root, free_port(), as_user)
        try:
            server._run([initdb, "-D", str(server.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                         "--no-sync", "--locale=C"])
            server.start()
        except BaseException:
            server.destroy()
            raise
        return server

    # -- control ----------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c max_connections=200")
        self._run([self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-o", options,
                   "-w", "-t", "60", "start"])

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` (disconnect clients, checkpoint) or ``immediate`` (a crash)."""
        self._run([self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"])

    def restart(self, mode: str = "fast") -> None:
        """Stop with ``mode`` and start again (what ``pg_ctl restart -m <mode>`` does)."""
        self.stop(mode)
        self.start()

    def running(self) -> bool:
        """Whether ``pg_ctl status`` sees a live server."""
        done = subprocess.run(self._as_user([self.pg_ctl, "-D", str(self.data), "status"]),
                              capture_output=True, check=False)
        return done.returncode == 0

    def destroy(self) -> None:
        """Stop the server (immediately) if it runs and remove its folder."""
        with contextlib.suppress(Exception):
            if self.data.exists() and self.running():
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    # -- databases --------------------------------------------------------------------------------
    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL of ``database`` on this server (TCP on loopback)."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create an empty database and return its URL."""
        admin = sa.create_engine(self.url(), isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        finally:
            admin.dispose()
        return self.url(name)

    def server_log(self, tail: int = 4000) -> str:
        """The end of the server's log (for assertion messages)."""
        try:
            return self.log.read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    def _as_user(self, command: list[str]) -> list[str]:
        return ["runuser", "-u", self.as_user, "--", *command] if self.as_user else command

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(self._as_user(command), capture_output=True, text=True, check=False,
                              timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n"
                               f"{done.stderr}\n{self.server_log()}")
