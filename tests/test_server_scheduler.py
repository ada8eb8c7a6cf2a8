"""The server's scheduler (``tmemlint.server.scheduler``) on an event loop: a burst of changes is linted once (the
newest text), a lint superseded while it runs is never published, and a slow lint shows progress that ends."""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("pygls")

from tmemlint.server import scheduler as sched  # noqa: E402


def test_burst_superseded_and_progress(monkeypatch):
    monkeypatch.setattr(sched, "PROGRESS_AFTER_S", 0.05)
    done, events, ran = [], [], []

    def progress(uri):
        events.append(("begin", uri))
        return lambda: events.append(("end", uri))

    s = sched.Scheduler(lambda job, r: done.append((job.generation, r)), lambda job, e: done.append(("error", e)),
                        progress)

    def work(v, seconds=0.0):
        def run():
            ran.append(v)
            time.sleep(seconds)
            return v
        return run

    async def main():
        for v in range(5):  # a burst closer together than the debounce: only the last one runs
            s.submit("file:///a.ptx", 10, work(v), delay=0.1)
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.3)
        s.submit("file:///a.ptx", 10, work("slow", 0.3), delay=0.0)  # superseded while it runs
        await asyncio.sleep(0.1)
        s.submit("file:///a.ptx", 10, work("last", 0.1), delay=0.0)
        await asyncio.sleep(0.8)

    asyncio.run(main())
    s.shutdown()
    assert ran == [4, "slow", "last"]
    assert [r for _, r in done] == [4, "last"]
    assert events == [("begin", "file:///a.ptx"), ("end", "file:///a.ptx")] * 2  # the slow one and the last
