"""The long-lived process: `baton run`, `baton worker`, the control API over the workspace's
Unix socket, the `Client` that talks to it, the CLI and the token-log tail.

Every name is imported on first use: FastAPI and uvicorn are for `baton run` alone, and the
CLI's light commands import only the client and what they print (docs/architecture.md,
"What a command imports")."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports

if TYPE_CHECKING:
    from baton.server._workspace_claim import WorkspaceClaim, claim_workspace
    from baton.server.client import Client, connect
    from baton.server.control_api import create_control_app
    from baton.server.control_server import ControlServer

__getattr__ = lazy_exports(
    __name__,
    {
        "Client": "baton.server.client",
        "connect": "baton.server.client",
        "ControlServer": "baton.server.control_server",
        "create_control_app": "baton.server.control_api",
        "WorkspaceClaim": "baton.server._workspace_claim",
        "claim_workspace": "baton.server._workspace_claim",
    },
)

__all__ = [
    "Client",
    "ControlServer",
    "WorkspaceClaim",
    "claim_workspace",
    "connect",
    "create_control_app",
]
