"""The MCP server object: the SDK's ``MCPServer`` with Hindsight's tools and resources, strict arguments and clear
tool errors. ``build_server`` makes one; ``transports`` serves it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Literal

from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import (
    CallToolResult,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
    Resource,
)
from pydantic import AnyUrl, ValidationError

from hindsight_core import Hindsight, __version__
from hindsight_core.access import Grant
from hindsight_core.actor import acting_as

from .errors import HindsightToolError, invalid_arguments, unexpected_arguments
from .resources import profile_resources, register_profile_resource
from .scope import BankScope, grant_of, granted
from .tools import MemoryTools, register_tools

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]

INSTRUCTIONS = (
    "Hindsight Memory: long-term memory that retains, recalls and reflects. Call recall before answering anything "
    "that may depend on earlier conversations or on what is known about the user; retain what is worth "
    "remembering (messages with ids keep their provenance); reflect to answer or judge from memory in the bank's "
    "own voice; correct replaces a memory that is wrong with what is true (the wrong one is kept as history, "
    "superseded); forget removes a memory, a document or everything about an entity. Results carry memory ids, "
    "sources (message ids) and dates: cite them."
)


class HindsightMCPServer(MCPServer[Any]):
    """An ``MCPServer`` over one ``Hindsight``: all its banks, or the one in ``scope``."""

    def __init__(self, hs: Hindsight, scope: BankScope, *, log_level: LogLevel = "WARNING") -> None:
        """Register the tools and the profile resource; nothing is served until a transport runs it."""
        instructions = INSTRUCTIONS
        if scope.fixed is not None:
            instructions += f" Every tool acts on memory bank {scope.fixed!r}."
        super().__init__(name="hindsight", title="Hindsight Memory", version=__version__,
                         instructions=instructions, log_level=log_level)
        self.hs = hs
        self.scope = scope
        self._accepted = register_tools(self, MemoryTools(hs, scope), scope)
        register_profile_resource(self, hs, scope)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Run a tool; an argument it does not take is refused, and a failure becomes one clear tool error."""
        accepted = self._accepted.get(name)
        if accepted is not None and not arguments.keys() <= accepted:
            # Refused, not ignored: with a fixed bank, a 'bank' argument would otherwise look obeyed.
            raise unexpected_arguments(name, arguments.keys() - accepted, accepted, self.scope.fixed)
        grant = request_grant(context)
        try:
            # Every tool runs as this surface and token: the audit trail records who wrote or forgot.
            with granted(grant), acting_as("mcp", grant.token_id if grant is not None else None):
                return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # a bug: the SDK logs its traceback and tells the client only that the tool failed
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, HindsightToolError):
                raise cause from None  # without the SDK's "Error executing tool ..." prefix
            if isinstance(cause, ValidationError):
                raise invalid_arguments(cause) from None
            raise

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        """Read a resource within the request's grant (another bank's profile reads as an unknown bank)."""
        with granted(request_grant(context)):
            return await super().read_resource(uri, context)

    async def _handle_list_resources(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        # The one place the SDK hands the listing its request: the profiles listed are those of the grant.
        with granted(grant_of(ctx.request)):
            return await super()._handle_list_resources(ctx, params)

    async def list_resources(self) -> list[Resource]:
        """The registered resources and one profile resource per bank this server can reach."""
        listed = await super().list_resources()
        return [*listed, *await asyncio.to_thread(profile_resources, self.hs, self.scope)]


def build_server(hs: Hindsight, *, bank: str | None = None, log_level: LogLevel = "WARNING",
                 tokens_required: bool = False) -> HindsightMCPServer:
    """An MCP server over ``hs``'s banks, or over ``bank`` alone (its tools then take no bank argument).

    ``log_level`` sets the SDK's logging (on stderr) for a process that has none configured yet.
    ``tokens_required``: served on HTTP behind ``transports.BearerTokenGuard``, so every request carries a grant
    and one that somehow does not reaches no bank.
    """
    return HindsightMCPServer(hs, BankScope(bank, tokens_required=tokens_required), log_level=log_level)


def request_grant(context: Context[Any, Any] | None) -> Grant | None:
    """The grant the HTTP guard attached to the request behind ``context`` (None on stdio or without tokens)."""
    if context is None:
        return None
    try:
        request = context.request_context.request
    except ValueError:  # a context made outside any request (a direct call)
        return None
    return grant_of(request)
