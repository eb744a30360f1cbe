"""The long-lived process: `baton run`, `baton worker`, the control API over the workspace's
Unix socket, the `Client` that talks to it, the CLI and the token-log tail."""

from typing import TYPE_CHECKING

from baton._lazy import lazy_exports
from baton.server._workspace_claim import WorkspaceClaim, claim_workspace
from baton.server.client import Client, connect

if TYPE_CHECKING:
    from baton.server.control_api import create_control_app
    from baton.server.control_server import ControlServer

# FastAPI and uvicorn: only `baton run` needs them, not `import baton` or the client.
__getattr__ = lazy_exports(
    __name__,
    {
        "ControlServer": "baton.server.control_server",
        "create_control_app": "baton.server.control_api",
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
