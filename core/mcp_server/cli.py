"""The ``mcp`` command: serve a memory store to MCP clients on stdio (the default) or streamable HTTP.

Usage::

    hindsight mcp [--path DIR | --graph bolt://... --vectors http://...] [--bank ID]
                  [--http HOST:PORT [--tokens FILE]] [--llm-url URL --llm-model NAME | --local-model NAME]

``add_commands`` adds it to a ``hindsight`` parser; ``python -m hindsight_core.mcp_server ...`` runs it alone.
Like the other commands, this module imports nothing heavy: the SDK and the engine are imported when the command
runs, and a missing ``mcp`` package is reported then, as an error that says what to install.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import HindsightError

if TYPE_CHECKING:
    from hindsight_core import Hindsight

    from ..access import Access
    from ..llm.base import LLM

SDK_MISSING = ("the MCP server needs the official MCP SDK, version 2: pip install 'hindsight-memory[mcp]' "
               "(import failed: {error})")


class UsageError(HindsightError):
    """A problem with the command line found after parsing (options that need each other): exit status 2."""


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``mcp`` to a ``hindsight`` parser's subcommands; ``common`` holds the global options (``--path``...)."""
    p = sub.add_parser(
        "mcp", parents=[common],
        help="serve memory to MCP clients (Claude Desktop, IDE agents, LangGraph) on stdio or HTTP",
        description="Serves the store's banks as MCP tools (retain, recall, reflect, correct, forget, list_banks) and "
                    "a profile resource per bank (hindsight://banks/{bank_id}/profile), on stdin/stdout unless "
                    "--http is given. Runs until the client closes stdin, or until Ctrl-C / SIGTERM.",
    )
    p.add_argument("--bank", help="serve this bank only (created if missing): tools then take no bank argument "
                                  "and no other bank can be reached")
    p.add_argument("--http", metavar="HOST:PORT", type=host_port,
                   help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (127.0.0.1 keeps it on "
                        "this machine; port 0 picks a free one, printed on stderr)")
    p.add_argument("--tokens", metavar="FILE",
                   help="with --http: accept the tokens of this file, each scoped to its banks (read or "
                        "read-write; made with 'hindsight token add'); default $HINDSIGHT_TOKENS_FILE")
    p.add_argument("--no-auth", action="store_true",
                   help="allow --http on a non-loopback address without a token (only on a network you trust); "
                        "otherwise give --tokens FILE or set $HINDSIGHT_MCP_TOKEN, and have clients send "
                        "Authorization: Bearer TOKEN")
    llm = p.add_mutually_exclusive_group()
    llm.add_argument("--llm-url", help="OpenAI-compatible endpoint for reflect and extraction, e.g. "
                                       "http://127.0.0.1:8080/v1 (with --llm-model; key from "
                                       "$HINDSIGHT_LLM_API_KEY)")
    llm.add_argument("--local-model", help="bundled local model: qwen2.5-1.5b (default), qwen2.5-0.5b or "
                                           "smollm2-135m")
    p.add_argument("--llm-model", help="model name to request from --llm-url")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> dict[str, Any] | None:
    """``mcp``: open the store, then serve it until the client or a signal ends the session."""
    try:
        import anyio
        import mcp.server.mcpserver  # noqa: F401  (version 2's server; version 1 has none)
    except ImportError as exc:
        raise UsageError(SDK_MISSING.format(error=exc)) from exc
    from ..cli.net import is_loopback
    from .server import build_server
    from .transports import TOKEN_ENV, serve_http, serve_stdio

    access = server_access(args)
    if args.http is not None and not access.required and not is_loopback(args.http[0]) and not args.no_auth:
        raise UsageError(f"refusing to serve {args.http[0]} without authentication: anyone who can reach the port "
                         f"could read and change these memories; give --tokens FILE or set ${TOKEN_ENV} (clients "
                         "then send Authorization: Bearer TOKEN), or pass --no-auth on a network you trust")
    model = choose_llm(args)
    where = describe_store(args)
    with _sigterm_interrupts() as closing, open_store(args, model) as hs:
        if args.bank is not None:
            hs.bank(args.bank)  # created now, and a malformed id is reported before anything is served
        server = build_server(hs, bank=args.bank, log_level="INFO" if args.verbose else "WARNING",
                              tokens_required=access.required)
        hs.warm_up_in_background()  # the first client's recall need not load the query model
        what = f"bank {args.bank!r}" if args.bank is not None else "every bank"
        try:
            if args.http is None:
                _say(f"serving {what} of {where} on stdio")
                anyio.run(serve_stdio, server)
            else:
                host, port = args.http
                if not access.required and not is_loopback(host):
                    _say(f"warning: listening on {host} without authentication (--no-auth): anyone who can reach "
                         "this port can read and change these memories")
                guarded = " (bearer token required)" if access.required else ""
                announce = functools.partial(_announce, f"serving {what} of {where}{guarded} at")
                anyio.run(functools.partial(serve_http, server, host, port, announce=announce,
                                            log_level="info" if args.verbose else "warning", access=access))
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM is how a server is meant to stop: the store is closed below, exit status 0.
            _say("stopped")
        finally:
            closing()
    return None


def server_access(args: argparse.Namespace) -> Access:
    """The tokens an HTTP server accepts: ``--tokens`` (else ``$HINDSIGHT_TOKENS_FILE``) and
    ``$HINDSIGHT_MCP_TOKEN`` (read-write on every bank); none on stdio, whose one client started the server."""
    from ..access import Access, access_from
    from .transports import configured_token

    if args.http is None:
        if args.tokens:
            raise UsageError("--tokens goes with --http (a stdio server has one client: the process that started it)")
        return Access()
    return access_from(args.tokens, configured_token())


def choose_llm(args: argparse.Namespace) -> LLM | None:
    """The model that reflect (and ``extract=true``) use: ``--llm-url``/``--llm-model``, ``--local-model``, else
    None, which leaves the library's default (``$HINDSIGHT_LLM_BASE_URL``, else the bundled local model)."""
    from ..llm.factory import ENV_LOCAL_MODEL, default_llm
    from ..llm.openai_compat import ENV_BASE_URL, ENV_MODEL

    if args.llm_url:
        if not args.llm_model:
            raise UsageError("--llm-url needs --llm-model (the model name to request)")
        # Through the factory, so the endpoint's key and timeout come from the environment as everywhere else.
        return default_llm({**os.environ, ENV_BASE_URL: args.llm_url, ENV_MODEL: args.llm_model})
    if args.llm_model:
        raise UsageError("--llm-model goes with --llm-url")
    if args.local_model:
        env = {k: v for k, v in os.environ.items() if k != ENV_BASE_URL}
        return default_llm({**env, ENV_LOCAL_MODEL: args.local_model})
    return None


def open_store(args: argparse.Namespace, llm: LLM | None) -> Hindsight:
    """The store the options name (created if missing: a server retains)."""
    from hindsight_core import Hindsight

    from ..cli.options import location

    return Hindsight.open(location(args), llm=llm)


def describe_store(args: argparse.Namespace) -> str:
    """The store in words, for the start-up line (an absolute path: clients start servers in any directory)."""
    from ..cli.options import location

    return location(args).describe()


def host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for an IPv6 address) as a pair; an ``argparse`` type."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, e.g. 127.0.0.1:8765, not {text!r}")
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {port!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port out of range: {number}")
    return host, number


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[Callable[[], None]]:
    """SIGTERM stops serving as Ctrl-C does; the callable it yields then ignores SIGTERM while the store closes.

    MCP clients end a stdio server by closing stdin, then by SIGTERM, and service managers send SIGTERM; by
    default it kills at once and leaves the store's lease and marks for the next process to recover. Closing
    is not interrupted either: a client that cannot wait for it escalates to SIGKILL anyway.
    """
    try:
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    except ValueError:  # not the main thread: leave signals alone
        yield lambda: None
        return

    def closing() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    try:
        yield closing
    finally:
        signal.signal(signal.SIGTERM, previous)


def _announce(prefix: str, url: str) -> None:
    _say(f"{prefix} {url}")


def _say(line: str) -> None:
    # Always stderr: on stdio, stdout carries the protocol.
    print(f"hindsight mcp: {line}", file=sys.stderr, flush=True)
