"""A broker drops what it still has out to a controller once a newer controller has written to it.

A controller paused (a stop-the-world GC, a frozen VM) holds the calls brokers made to it; a new
controller takes over and fences every broker that does not heartbeat to it within its session.
A broker learns of the new controller from its first control request; from then on its calls to
the old one are dropped and asked again of the new one, as Kafka's brokers drop a request to a
controller that lost its place. (Before, a heartbeat held by a paused controller for longer than
the session got the broker fenced: the failover matrix's zombie-controller row failed 2 runs in 5.)
"""
import asyncio

import pytest

from actors.broker import ControllerChanged, _Messenger


def messenger() -> _Messenger:
    # Only the controller-change part of the broker's messenger, without a Ray actor around it.
    shell = object.__new__(_Messenger)
    shell._controller = "the controller cached"
    shell._controller_epoch = -1
    shell._controller_changed = asyncio.Event()
    return shell


def test_a_call_out_to_the_old_controller_is_dropped_when_a_newer_one_writes():
    async def scenario():
        shell = messenger()
        shell.on_controller_epoch(1)  # the first controller this broker hears from: nothing to drop
        assert shell._controller == "the controller cached"
        held = asyncio.get_running_loop().create_future()  # a paused controller never answers
        call = asyncio.ensure_future(shell._until_controller_changes(held))
        await asyncio.sleep(0)
        shell.on_controller_epoch(1)  # the same controller again: nothing changes
        await asyncio.sleep(0)
        assert not call.done()
        shell.on_controller_epoch(2)
        with pytest.raises(ControllerChanged):
            await asyncio.wait_for(call, 5)
        await asyncio.sleep(0)  # the dropped call's cancellation reaches what it awaited
        assert held.cancelled() and shell._controller is None
        # The next call is not dropped by the change it already saw.
        answered = asyncio.get_running_loop().create_future()
        answered.set_result("heartbeat answered")
        assert await shell._until_controller_changes(answered) == "heartbeat answered"
        # A call whose caller gives up (its timeout) is not left running.
        hung = asyncio.get_running_loop().create_future()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(shell._until_controller_changes(hung), 0.05)
        await asyncio.sleep(0)
        assert hung.cancelled()
    asyncio.run(scenario())
