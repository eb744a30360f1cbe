"""One runtime per workspace: the pid file `<workspace>/.baton/baton.pid`, held locked.

The claim is an exclusive `flock` on the pid file, held for the life of the process: the
kernel releases it when the process dies however it dies, so a lock that can be taken means
the previous holder is gone and its pid file and socket are stale. (Checking "pid alive and
socket answers" instead would misjudge a reused pid, and a runtime still starting up.)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from baton._log import get_logger
from baton._private import private_dir, private_opener
from baton.errors import StateFileError, UsageError
from baton.server._workspace_files import CONTROL_SOCKET, PID_FILE, read_pid
from baton.server.errors import WorkspaceBusyError

log = get_logger(__name__)

# sockaddr_un.sun_path holds 108 bytes on Linux (104 on macOS), the terminating NUL included.
SOCKET_PATH_MAX = 103


@dataclass(frozen=True, slots=True)
class WorkspaceClaim:
    """Proof that this process holds `workspace`; where its control files live."""

    workspace: Path
    pid_file: Path
    socket_path: Path


def _lock(pid_file: Path, workspace: Path) -> int:
    """Open and lock the pid file that is at `pid_file` now; the fd stays open to hold it."""
    for _ in range(5):
        try:
            # O_NONBLOCK: a named pipe there must not make the open wait for a peer.
            fd = private_opener(pid_file, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK)
        except IsADirectoryError:
            raise _directory(pid_file, "baton's pid file") from None
        except OSError as exc:
            raise StateFileError(
                pid_file, f"cannot be opened ({exc.strerror or exc})", "check its permissions"
            ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise StateFileError(
                pid_file, "is not a regular file", "move it aside, then start again"
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise WorkspaceBusyError(workspace, read_pid(pid_file)) from None
        except OSError as exc:
            os.close(fd)
            raise UsageError(f"cannot lock {pid_file}: {exc} — use a local directory") from None
        # The previous holder may have unlinked the file between our open and our lock:
        # then we hold a lock nobody else can see, so try again on the current file.
        try:
            same = os.fstat(fd).st_ino == os.stat(pid_file).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)
    raise WorkspaceBusyError(workspace, read_pid(pid_file))


def _directory(path: Path, what: str) -> StateFileError:
    # Never removed for the user: a directory there was made by someone, and may hold files.
    return StateFileError(
        path, f"is a directory, not {what}", "remove it or move it aside, then start again"
    )


def _claim(workspace: Path) -> tuple[WorkspaceClaim, int]:
    control_dir = workspace / ".baton"
    try:
        private_dir(control_dir)  # README, "Sandbox and file modes"
    except (FileExistsError, NotADirectoryError):
        raise StateFileError(
            control_dir, "is not a directory", "move it aside; baton keeps its state there"
        ) from None
    claim = WorkspaceClaim(workspace, workspace / PID_FILE, workspace / CONTROL_SOCKET)
    size = len(os.fsencode(claim.socket_path))
    if size > SOCKET_PATH_MAX:
        raise UsageError(
            f"the control socket path {claim.socket_path} is {size} bytes; Unix sockets allow "
            f"{SOCKET_PATH_MAX} — use a workspace with a shorter path"
        )
    stale = read_pid(claim.pid_file)
    fd = _lock(claim.pid_file, workspace)
    try:
        if stale is not None and stale != os.getpid():
            log.info("control.stale_pid_removed", pid=stale, path=str(claim.pid_file))
        if claim.socket_path.is_dir() and not claim.socket_path.is_symlink():
            raise _directory(claim.socket_path, "baton's control socket")
        if claim.socket_path.exists() or claim.socket_path.is_symlink():
            claim.socket_path.unlink()
            log.info("control.stale_socket_removed", path=str(claim.socket_path))
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise
    return claim, fd


def _release(claim: WorkspaceClaim, fd: int) -> None:
    # Unlinked while still locked, so no newcomer can lock this file and believe it won.
    with contextlib.suppress(FileNotFoundError):
        claim.socket_path.unlink()
    with contextlib.suppress(FileNotFoundError):
        claim.pid_file.unlink()
    os.close(fd)


@asynccontextmanager
async def claim_workspace(workspace: str | Path) -> AsyncIterator[WorkspaceClaim]:
    """Hold `workspace` for this process for the block; refuse if a live runtime holds it.

    A stale pid file or socket left by a process that died is replaced. On exit the pid
    file and the socket are removed.
    """
    root = Path(await anyio.Path(workspace).resolve())
    claim, fd = await anyio.to_thread.run_sync(_claim, root)
    try:
        yield claim
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_release, claim, fd)
