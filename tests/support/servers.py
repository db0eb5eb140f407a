"""Test support: start and stop the servers of server mode on loopback, ArcadeDB's Bolt endpoint and Chroma.

Used by the test command, the conformance suite and (from a checkout) the benchmarks' server backend::

    with bolt_server() as bolt, chroma_server() as chroma:
        hs = open_server_hindsight(bolt.uri, chroma.url, user=bolt.user, password=bolt.password)

From a shell, in the repository root (``scripts/test.sh`` does this)::

    eval "$(python tests/support/servers.py start --dir /tmp/hs-servers)"   # exports NEO4J_URI, CHROMA_HOST, ...
    python tests/support/servers.py stop --dir /tmp/hs-servers

Each server runs in its own process (ArcadeDB inside a JVM started by ``arcadedb-embedded``, from the ``dev``
extra), bound to 127.0.0.1 on a free port; stopping terminates the process group, so nothing is left behind.
This file is not part of any distribution: it lives with the tests and imports only the standard library and
``hindsight_core``, so it also runs by path.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hindsight_core.errors import StoreError

DEFAULT_DATABASE = "hindsight"
DEFAULT_PASSWORD = "hindsight-test"  # loopback-only test servers; real deployments pass their own


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class BoltServer:
    """A running ArcadeDB server with its Bolt endpoint."""

    uri: str
    http_url: str
    user: str
    password: str
    database: str
    pid: int
    root: str

    def env(self) -> dict[str, str]:
        """Environment variables that point ``Neo4jGraphStore`` at this server."""
        return {
            "NEO4J_URI": self.uri, "NEO4J_USER": self.user, "NEO4J_PASSWORD": self.password,
            "NEO4J_DATABASE": self.database, "ARCADEDB_HTTP_URL": self.http_url,
        }


@dataclass
class ChromaServer:
    """A running ``chroma run`` server."""

    host: str
    port: int
    pid: int
    path: str

    @property
    def url(self) -> str:
        """``http://host:port``, as ``Hindsight.open(vectors=...)`` takes it."""
        return f"http://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        """Environment variables that point the vector index at this server."""
        return {"CHROMA_HOST": self.host, "CHROMA_PORT": str(self.port)}


def _wait(check: Any, what: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StoreError(f"{what} exited with code {proc.returncode}; log {log}:\n{_tail(log)}")
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.2)
    _terminate(proc.pid)
    raise StoreError(f"{what} did not answer within {timeout:.0f}s; log {log}:\n{_tail(log)}")


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-2000:]
    except OSError:
        return ""


def _terminate(pid: int, timeout: float = 20.0) -> None:
    """Stop a server's whole process group: SIGTERM, then SIGKILL if it lingers."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except (ProcessLookupError, PermissionError):
            break
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                break
        time.sleep(0.1)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def start_bolt_server(
    root: str | Path, *, port: int | None = None, http_port: int | None = None,
    password: str = DEFAULT_PASSWORD, database: str = DEFAULT_DATABASE, timeout: float = 120.0,
) -> BoltServer:
    """Start ArcadeDB with its Bolt plugin in a new process and wait until Bolt answers."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    http_port = http_port or free_port()
    log = root / "arcadedb.log"
    # The child runs this file by path: it works however this module was imported (pytest, a script, by path).
    cmd = [sys.executable, str(Path(__file__).resolve()), "_arcadedb", "--root", str(root), "--port", str(port),
           "--http-port", str(http_port), "--password", password, "--database", database]
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    ready = root / "ready"

    def check() -> bool:
        return ready.exists() and _port_open(port)

    _wait(check, f"ArcadeDB Bolt server on 127.0.0.1:{port}", proc, log, timeout)
    return BoltServer(uri=f"bolt://127.0.0.1:{port}", http_url=f"http://127.0.0.1:{http_port}", user="root",
                      password=password, database=database, pid=proc.pid, root=str(root))


def start_chroma_server(path: str | Path, *, port: int | None = None, timeout: float = 120.0) -> ChromaServer:
    """Start ``chroma run`` on loopback in a new process and wait until its heartbeat answers."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    chroma = Path(sys.executable).with_name("chroma")
    log = path.parent / f"{path.name}-chroma.log"
    cmd = [str(chroma) if chroma.exists() else "chroma", "run", "--path", str(path), "--host", "127.0.0.1",
           "--port", str(port)]
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)

    def check() -> bool:
        for api in ("v2", "v1"):
            with contextlib.suppress(Exception), urllib.request.urlopen(
                f"http://127.0.0.1:{port}/api/{api}/heartbeat", timeout=2
            ) as resp:
                if resp.status == 200:
                    return True
        return False

    _wait(check, f"Chroma server on 127.0.0.1:{port}", proc, log, timeout)
    return ChromaServer(host="127.0.0.1", port=port, pid=proc.pid, path=str(path))


def stop_server(server: BoltServer | ChromaServer) -> None:
    """Stop a server started by this module (its whole process group)."""
    _terminate(server.pid)


@contextlib.contextmanager
def bolt_server(root: str | Path | None = None, **kwargs: Any) -> Iterator[BoltServer]:
    """An ArcadeDB Bolt server for the ``with`` block (temporary folder unless ``root`` is given)."""
    with contextlib.ExitStack() as stack:
        if root is None:
            root = stack.enter_context(tempfile.TemporaryDirectory(prefix="hs-arcadedb-"))
        server = start_bolt_server(root, **kwargs)
        try:
            yield server
        finally:
            stop_server(server)


@contextlib.contextmanager
def chroma_server(path: str | Path | None = None, **kwargs: Any) -> Iterator[ChromaServer]:
    """A Chroma server for the ``with`` block (temporary folder unless ``path`` is given)."""
    with contextlib.ExitStack() as stack:
        if path is None:
            path = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hs-chroma-"))) / "data"
        server = start_chroma_server(path, **kwargs)
        try:
            yield server
        finally:
            stop_server(server)


def open_server_hindsight(
    graph_uri: str | None = None,
    vectors_url: str | None = None,
    *,
    user: str | None = None,
    password: str | None = None,
    database: str | None = None,
    arcadedb_http: str | None = None,
    **kwargs: Any,
) -> Any:
    """A ``Hindsight`` on the server backend (Bolt graph store + Chroma server).

    Missing values come from the environment: ``NEO4J_URI``/``NEO4J_USER``/``NEO4J_PASSWORD``/
    ``NEO4J_DATABASE``, ``ARCADEDB_HTTP_URL`` and ``CHROMA_HOST``/``CHROMA_PORT``. Other keyword arguments go
    to ``Hindsight`` (``embedder``, ``llm``, ``settings``, ...).
    """
    from hindsight_core.hindsight import Hindsight
    from hindsight_core.stores.chroma import ChromaVectorIndex
    from hindsight_core.stores.neo4j import Neo4jGraphStore

    store = Neo4jGraphStore(graph_uri, user, password, database=database, arcadedb_http=arcadedb_http)
    try:
        if vectors_url:
            index: Any = vectors_url
        else:
            index = ChromaVectorIndex.http(
                os.environ.get("CHROMA_HOST", "127.0.0.1"), int(os.environ.get("CHROMA_PORT", "8000"))
            )
        return Hindsight.open(None, graph=store, vectors=index, **kwargs)
    except BaseException:
        store.close()
        raise


def ensure_arcadedb_database(http_url: str, name: str, *, user: str = "root", password: str = DEFAULT_PASSWORD) -> None:
    """Create a database on an ArcadeDB server unless it exists (tests keep their data apart this way)."""
    import base64

    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    headers = {"Content-Type": "application/json", "Authorization": f"Basic {token}"}
    base = http_url.rstrip("/")
    try:
        with urllib.request.urlopen(
            urllib.request.Request(f"{base}/api/v1/exists/{name}", headers=headers), timeout=30
        ) as resp:
            if json.loads(resp.read()).get("result") is True:
                return
        body = json.dumps({"command": f"create database {name}"}).encode()
        with urllib.request.urlopen(
            urllib.request.Request(f"{base}/api/v1/server", data=body, headers=headers, method="POST"), timeout=60
        ):
            return
    except OSError as exc:
        raise StoreError(f"cannot create ArcadeDB database {name!r} through {base}: {exc}") from exc


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _run_arcadedb(args: argparse.Namespace) -> None:
    """Child process body: run ArcadeDB with Bolt until SIGTERM."""
    from arcadedb_embedded.server import ArcadeDBServer

    server = ArcadeDBServer(
        root_path=args.root, root_password=args.password,
        config={"host": "127.0.0.1", "http_port": args.http_port,
                "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin", "bolt_port": args.port},
    )
    server.start()
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        with contextlib.suppress(Exception):  # an existing database on a reused root is fine
            server.create_database(args.database)
        Path(args.root, "ready").write_text("ok")
        while not stopping:
            time.sleep(0.2)
    finally:
        Path(args.root, "ready").unlink(missing_ok=True)
        server.stop()
    os._exit(0)  # the JVM's non-daemon threads would otherwise keep the process alive


def _main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python tests/support/servers.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    start = sub.add_parser("start", help="start ArcadeDB Bolt + Chroma in the background; print export lines")
    start.add_argument("--dir", required=True, help="folder for data, logs and the pid file")
    stop = sub.add_parser("stop", help="stop the servers started with 'start --dir'")
    stop.add_argument("--dir", required=True)
    child = sub.add_parser("_arcadedb")
    child.add_argument("--root", required=True)
    child.add_argument("--port", type=int, required=True)
    child.add_argument("--http-port", type=int, required=True)
    child.add_argument("--password", required=True)
    child.add_argument("--database", required=True)
    args = parser.parse_args(argv)
    if args.cmd == "_arcadedb":
        _run_arcadedb(args)
    elif args.cmd == "start":
        root = Path(args.dir)
        bolt = start_bolt_server(root / "arcadedb")
        try:
            chroma = start_chroma_server(root / "chroma")
        except BaseException:
            stop_server(bolt)
            raise
        (root / "servers.json").write_text(json.dumps({"bolt": asdict(bolt), "chroma": asdict(chroma)}))
        for key, value in {**bolt.env(), **chroma.env()}.items():
            print(f"export {key}={shlex.quote(value)}")
    else:
        state = Path(args.dir) / "servers.json"
        if state.exists():
            data = json.loads(state.read_text())
            stop_server(ChromaServer(**data["chroma"]))
            stop_server(BoltServer(**data["bolt"]))
            state.unlink()


if __name__ == "__main__":
    _main()
