"""Shared fixtures of the gateway unit tests."""

import asyncio

import pytest

from kconfigs_enforcement.gateway.channel import Channel


async def _accepted_pair(capacity: int):
    """(server, server-side Channel, client reader, client writer) on 127.0.0.1."""
    loop = asyncio.get_running_loop()
    accepted = loop.create_future()

    def new_channel() -> Channel:
        channel = Channel(capacity)
        channel.on_connection = accepted.set_result
        return channel

    server = await loop.create_server(new_channel, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    return server, await accepted, reader, writer


@pytest.fixture
def accepted_pair():
    """``await accepted_pair(capacity)``: (server, server-side Channel, client reader, client
    writer) of a real connection on 127.0.0.1."""
    return _accepted_pair
