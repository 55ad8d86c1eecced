"""A throw-away PostgreSQL server for tests and measurements: a cluster initialised with ``initdb`` in
a temporary directory and started with ``pg_ctl`` on a free port of 127.0.0.1, stopped and deleted at
the end (:class:`TemporaryCluster`, a context manager).

The server refuses to run as root, so when this process is root the cluster belongs to the
``postgres`` system user (created with ``useradd --system`` when missing; Debian's package creates
it) and every server command runs through ``runuser``. The superuser ``bench`` logs in over TCP with a
password (scram-sha-256), so a client exercises a password from an environment variable;
``psql`` runs the same SQL by hand (:meth:`TemporaryCluster.psql`). :func:`postgres_binaries` finds the
binaries (``initdb`` on PATH, else the newest ``/usr/lib/postgresql/<version>/bin``); None when none
exist, the one reason tests skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rag.generation.local_server import free_port

SUPERUSER = "bench"
SYSTEM_USER = "postgres"


def postgres_binaries() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``psql``; None when PostgreSQL is not installed."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent  # Debian links /usr/local/bin/initdb to its versioned directory
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                      key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0)
    return versions[-1].parent if versions else None


class TemporaryCluster:
    """A running PostgreSQL server on ``127.0.0.1:<port>`` for the ``with`` block (module docstring);
    ``uri`` names it without the password, ``password`` is the superuser's."""

    def __init__(self, binaries: Path | None = None):
        found = binaries or postgres_binaries()
        if found is None:
            raise RuntimeError("no PostgreSQL binaries (initdb, pg_ctl): install Debian's postgresql package")
        self.binaries = found
        self.port = free_port()
        self.password = secrets.token_urlsafe(18)
        self.root = Path(tempfile.mkdtemp(prefix="rag-bench-pg-"))
        self.data = self.root / "data"
        self.uri = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"
        self._as_root = os.geteuid() == 0

    def _run(self, command: Sequence[str], **kwargs) -> subprocess.CompletedProcess:
        prefix = ["runuser", "-u", SYSTEM_USER, "--"] if self._as_root else []
        return subprocess.run([*prefix, *command], check=True, capture_output=True, text=True, timeout=120, **kwargs)

    def __enter__(self) -> "TemporaryCluster":
        password_file = self.root / "password"
        password_file.write_text(self.password + "\n")
        if self._as_root:
            if subprocess.run(["id", "-u", SYSTEM_USER], capture_output=True).returncode != 0:
                subprocess.run(["useradd", "--system", "--no-create-home", SYSTEM_USER], check=True, capture_output=True)
            shutil.chown(self.root, SYSTEM_USER)
            shutil.chown(password_file, SYSTEM_USER)
        try:
            self._run([str(self.binaries / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--pwfile", str(password_file),
                       "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C.UTF-8"])
            self._run([str(self.binaries / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "server.log"), "-w",
                       "-o", f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off", "start"])
        except subprocess.CalledProcessError as exc:
            log = (self.root / "server.log").read_text() if (self.root / "server.log").is_file() else ""
            self._cleanup()
            raise RuntimeError(f"PostgreSQL did not start: {exc.stderr or exc.stdout}{log[-2000:]}") from None
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self._run([str(self.binaries / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"])
        finally:
            self._cleanup()

    def _cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def psql(self, sql: str, variables: dict[str, str] | None = None) -> list[list[str]]:
        """The rows ``psql`` prints for ``sql`` (run by hand, as a user would: ``-v name=value`` for each
        variable, referred to in the SQL as ``:'name'`` or ``:name``), each row's fields split at ``|``."""
        command = [str(self.binaries / "psql"), "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1",
                   "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER, "-d", "postgres"]
        for name, value in (variables or {}).items():
            command += ["-v", f"{name}={value}"]
        done = subprocess.run(command, input=sql, capture_output=True, text=True, check=True, timeout=120,
                              env={**os.environ, "PGPASSWORD": self.password})
        return [line.split("|") for line in done.stdout.splitlines() if line]
