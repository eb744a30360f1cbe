"""The mailbox database past the process's file-size limit (`ulimit -f`): SQLite reports the
EFBIG as a plain I/O error, and baton still names it for what it is."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

LIMIT = 200_000  # bytes the child process may write to one file

_SENDS_UNDER_LIMIT = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    import anyio
    from pydantic import BaseModel
    from baton.mailboxes import Envelope
    from baton.mailboxes.codec import EnvelopeCodec
    from baton.mailboxes.sqlite import SqliteMailbox, SqliteStore

    class Ping(BaseModel):
        n: int
        text: str = ""

    async def main(root: Path, limit: int) -> None:
        resource.setrlimit(
            resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1])
        )
        refused = None
        async with SqliteStore.open(root / "m.sqlite3") as store:
            box = SqliteMailbox("box", store, EnvelopeCodec({"Ping": Ping}), capacity=1000)
            try:
                for n in range(1000):
                    await box.send(Envelope("box", Ping(n=n, text="w" * 5000)))
            except Exception as exc:
                refused = [type(exc).__name__, str(exc)]
        print(json.dumps({"refused": refused}))

    anyio.run(main, Path(sys.argv[1]), int(sys.argv[2]))
    """
)


def test_a_send_past_the_file_size_limit_is_a_file_too_large_failure(tmp_path: Path) -> None:
    """Under RLIMIT_FSIZE (a child process) a send that would grow the database past the
    limit raises FileTooLargeFailure naming the database's file and the limit, not a
    "cannot be opened or written" StateFileError."""
    result = subprocess.run(
        [sys.executable, "-c", _SENDS_UNDER_LIMIT, str(tmp_path), str(LIMIT)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == result.returncode, result.stderr[-3000:]
    kind, message = json.loads(result.stdout.splitlines()[-1])["refused"]
    database = tmp_path / "m.sqlite3"
    assert "FileTooLargeFailure" == kind
    assert message.startswith(str(database))
    said = "cannot grow (disk I/O error): this process may write files of at most 200,000 bytes"
    assert said in message
