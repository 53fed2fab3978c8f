"""A private PostgreSQL 16 with pgvector for tests, from the ``pgserver`` wheel's own binaries.

Debian's PostgreSQL on this machine has no pgvector, so the tests run the server ``pgserver`` ships
(PostgreSQL 16 with the ``vector`` extension) through its command functions: ``initdb`` into a temporary
folder and ``pg_ctl start`` on a free loopback port with trust auth. As root the commands run as the
``postgres`` OS user (initdb refuses root); any other user runs them as itself.

Example::

    with pgvector_server() as admin_url:     # postgresql+psycopg://postgres@127.0.0.1:<port>/postgres
        ...
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pgserver
from ports import free_port

OS_USER = "postgres"


@contextmanager
def pgvector_server() -> Iterator[str]:
    """Start a throwaway server for the block; yields the admin URL of its ``postgres`` database."""
    root = Path(tempfile.mkdtemp(prefix="lunora-pgvector-"))
    as_user: dict[str, Any] = {}
    if os.geteuid() == 0:
        entry = pwd.getpwnam(OS_USER)
        os.chown(root, entry.pw_uid, entry.pw_gid)
        as_user = {"user": OS_USER, "group": entry.pw_gid}
    data, port = root / "data", free_port()
    started = False
    try:
        pgserver.initdb(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"],
                        pgdata=data, **as_user)
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        pgserver.pg_ctl(["-l", str(root / "server.log"), "-o", options, "-w", "-t", "60", "start"],
                        pgdata=data, **as_user)
        started = True
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        if started:
            pgserver.pg_ctl(["-m", "immediate", "-w", "-t", "60", "stop"], pgdata=data, **as_user)
        shutil.rmtree(root, ignore_errors=True)
