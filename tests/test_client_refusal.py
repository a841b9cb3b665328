"""A daemon that refuses a connection says why, even when it has already
closed by the time the client sends its Hello (the refusal waits unread in
the client's receive buffer; the send itself fails with a broken pipe)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import anyio
import pytest

from omem_client import AsyncClient, Client, ForbiddenError
from omem_protocol import Error, Reply, encode_message

REFUSAL = "only the user who runs openmemoryd may connect to it"


def refusing_server(path: Path) -> tuple[socket.socket, threading.Event]:
    """Accepts one connection, sends the refusal and closes without reading."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    closed = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        frame = Reply(id=0, body=Error(code="forbidden", message=REFUSAL))
        conn.sendall(encode_message(frame))
        conn.close()
        closed.set()

    threading.Thread(target=serve, daemon=True).start()
    return listener, closed


def test_blocking_client_reports_the_refusal_not_a_broken_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "d.sock"
    listener, closed = refusing_server(path)
    opened = Client._open_socket

    def open_after_the_daemon_closed(self: Client) -> socket.socket:
        sock = opened(self)
        assert closed.wait(5)
        return sock

    monkeypatch.setattr(Client, "_open_socket", open_after_the_daemon_closed)
    client = Client(path, timeout=5)
    with listener, pytest.raises(ForbiddenError, match=REFUSAL):
        client.status()


def test_async_client_reports_the_refusal(tmp_path: Path) -> None:
    path = tmp_path / "d.sock"
    listener, closed = refusing_server(path)

    async def scenario() -> None:
        with pytest.raises(ForbiddenError, match=REFUSAL):
            async with AsyncClient(path, timeout=5) as client:
                await client.status()

    with listener:
        anyio.run(scenario)
    # the refusal can be read before the server's thread gets to close and say so
    assert closed.wait(5)
