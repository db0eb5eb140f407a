"""Running the explorer: open the store, bind the port, print the address with the token, serve until Ctrl-C.

The store is opened like any other process opens it (it joins the leases, so it takes over what a dead process
left), but without a background worker: the explorer only reads, forgets and corrects on request, and never runs
model work. The socket is bound before anything is printed, so the printed address is live and ``--port 0`` prints
the free port it got.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from typing import Any

from ..access import TokenFile
from ..cli.net import is_loopback
from ..stores.locate import StoreLocation
from .auth import Guard

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready TCP socket on ``host:port`` (``port`` 0: a free one)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (pass another --port, or 0 for "
                      "any free one)") from exc
    sock.set_inheritable(True)
    return sock


def url_of(host: str, port: int) -> str:
    """``http://host:port`` (IPv6 addresses in brackets)."""
    name = host.strip("[]")
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


def serve(
    where: StoreLocation,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    open_browser: bool = False,
    out: Callable[..., None] = print,
    tokens: TokenFile | None = None,
    **open_kwargs: Any,
) -> None:
    """Serve the explorer on ``host:port`` until interrupted; prints the address (with the token in its fragment,
    which browsers never send to a server) and the token. With ``tokens`` (a token file), every request needs one
    of its tokens and reaches only its banks; no token is printed then (unless ``$HINDSIGHT_UI_TOKEN`` is set)."""
    import uvicorn

    from ..hindsight import Hindsight
    from .app import create_app

    sock = bind(host, port)
    try:
        guard = Guard.for_host(host, tokens=tokens)
        hs = Hindsight.open(where, start_worker=False, **open_kwargs)
        with hs:
            app = create_app(hs, guard)
            hs.warm_up_in_background()  # the first search in the page need not load the query model
            actual = sock.getsockname()[1]
            url = url_of(host, actual)
            out(f"Hindsight explorer for {where.describe()}")
            if tokens is not None:
                out(f"  open:  {url}/#token=TOKEN  (a token of {tokens.path}; each reaches only its banks)")
            if guard.token is not None:
                out(f"  open:  {url}/#token={guard.token}")
                reads = "" if guard.reads_need_token else "; reads are open"
                out(f"  token: {guard.token}  (needed to forget or correct{reads})")
            if not is_loopback(host):
                out(f"  warning: listening on {host}, not a loopback address: anyone who can reach it and has the "
                    "token can read, forget and correct memories; the connection is not encrypted")
            out("  Ctrl-C stops it.")
            sys.stdout.flush()
            if open_browser:
                import webbrowser

                webbrowser.open(f"{url}/#token={guard.token}" if guard.token else url)
            # log_config=None: uvicorn's records go to the scrubbing handler of the command (cli/safe_output.py).
            config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", log_config=None)
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
