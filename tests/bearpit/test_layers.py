"""The embedded channel layer delivers between event loops of one process."""

from __future__ import annotations

import asyncio
import threading
import time

from bearpit.layers import LoopSafeInMemoryChannelLayer


def test_a_send_from_another_loop_wakes_the_receiving_one_at_once() -> None:
    layer = LoopSafeInMemoryChannelLayer()
    waiting = threading.Event()
    got: list[tuple[dict[str, object], float]] = []

    async def receive() -> None:
        channel = "specific.inmemory!page"
        await layer.group_add("realm.r1", channel)
        waiting.set()
        # Nothing else on this loop would wake it: only the handed-over send can.
        message = await asyncio.wait_for(layer.receive(channel), 5)
        got.append((message, time.monotonic()))

    receiver = threading.Thread(target=asyncio.run, args=(receive(),))
    receiver.start()
    assert waiting.wait(5)
    time.sleep(0.05)  # the receiver is parked in receive()
    sent_at = time.monotonic()
    asyncio.run(layer.group_send("realm.r1", {"type": "realm.message", "data": {"n": 1}}))
    receiver.join(10)
    assert got, "the message never reached the other loop"
    message, at = got[0]
    assert message == {"type": "realm.message", "data": {"n": 1}}
    assert at - sent_at < 0.5, f"woken {at - sent_at:.3f}s after the send"


def test_within_one_loop_it_is_the_plain_in_memory_layer() -> None:
    async def roundtrip() -> dict[str, object]:
        layer = LoopSafeInMemoryChannelLayer()
        channel = await layer.new_channel()
        await layer.group_add("g", channel)
        await layer.group_send("g", {"type": "x"})
        message = await layer.receive(channel)
        await layer.group_discard("g", channel)
        return message

    assert asyncio.run(roundtrip()) == {"type": "x"}
