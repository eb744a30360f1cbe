"""A TCP proxy on loopback in front of the test's S3 server that can hold or cut a request
midway through its body: how the contract tests reach a PUT half sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import SocketAttribute, SocketStream

CHUNK = 16 * 1024


class GateProxy:
    """Forwards every connection to `port`; a client's bytes past `after` are held until
    `release` is set (`hold`) or the connection is closed there (`cut`). Replies always
    flow. `reached` is set when a connection first gets that far."""

    def __init__(self, port: int, after: int, *, cut: bool) -> None:
        self.port = port
        self.after = after
        self.cut = cut
        self.reached = anyio.Event()
        self.release = anyio.Event()
        self.endpoint = ""

    async def handle(self, client: SocketStream) -> None:
        async with (
            client,
            await anyio.connect_tcp("127.0.0.1", self.port) as server,
            anyio.create_task_group() as both,
        ):
            both.start_soon(self._pipe, server, client, None)
            await self._pipe(client, server, self.after)
            both.cancel_scope.cancel()

    async def _pipe(self, source: SocketStream, sink: SocketStream, gate: int | None) -> None:
        sent = 0
        try:
            while True:
                data = await source.receive(CHUNK)
                if gate is not None and sent + len(data) > gate:
                    await sink.send(data[: gate - sent])
                    self.reached.set()
                    if self.cut:
                        return  # the request ends here: both sides are closed
                    await self.release.wait()
                    data, gate = data[gate - sent :], None
                await sink.send(data)
                sent += len(data)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return


@asynccontextmanager
async def gate_proxy(port: int, after: int, *, cut: bool) -> AsyncIterator[GateProxy]:
    """A `GateProxy` to loopback `port`, listening on a free loopback port until the end."""
    proxy = GateProxy(port, after, cut=cut)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as serving:
        port = listener.extra(SocketAttribute.local_port)  # noqa: S610 - anyio's, not Django's
        proxy.endpoint = f"http://127.0.0.1:{port}"
        serving.start_soon(listener.serve, proxy.handle)
        try:
            yield proxy
        finally:
            proxy.release.set()
            serving.cancel_scope.cancel()
