"""When documents are linted: off the message loop, only the newest text of each document, superseded work
cancelled.

Every change (or configuration reload) makes a ``Job`` for its document and starts a debounce of ``DEBOUNCE_S``; a
later change of the same document cancels the waiting job, so a burst of keystrokes gives one lint of the last
text.  A job that outlives its debounce runs in a worker thread (``run_job``); when a newer job of the same
document arrives meanwhile, the old one is told to stop (``Job.cancelled``) and its findings are never published.
Documents of at least ``FORK_MIN_LINES`` lines are linted in a forked child process on POSIX (``_run_forked``) so
that stopping one is immediate (the child is killed) and the lint does not hold the message loop's interpreter
lock; smaller documents lint in the thread (tens of milliseconds; a superseded one runs to its end and is
dropped)."""

from __future__ import annotations

import asyncio
import itertools
import os
import pickle
import select
import signal
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

#: Seconds between a change and its lint; changes closer together than this are linted once.
DEBOUNCE_S = 0.12
#: Documents with at least this many lines are linted in a forked process (POSIX), which can be killed.
FORK_MIN_LINES = 4000
#: A lint running longer than this shows ``$/progress`` (when the client supports work-done progress).
PROGRESS_AFTER_S = 0.3


@dataclass(slots=True)
class Job:
    """One lint of one document's text: ``generation`` orders the jobs of ``uri`` (the newest one wins);
    ``work`` computes the result (in the worker); ``cancelled`` is set when a newer job supersedes this one."""

    uri: str
    generation: int
    lines: int
    work: Callable[[], Any]
    cancelled: threading.Event = field(default_factory=threading.Event)
    #: what the caller needs to publish the result (the server: the text, its version and path)
    meta: Any = None


class Cancelled(Exception):
    """The job was superseded before it finished."""


#: Set when no warm-up is running: a fork must not happen while another thread imports modules (the child would
#: inherit a held import lock and wait for it forever).
_WARM = threading.Event()
_WARM.set()
#: A forked lint that has not answered after this many seconds is killed and the work is done in the thread.
CHILD_TIMEOUT_S = 120.0


def _warm_up(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:  # noqa: BLE001 - only a warm-up
        pass
    finally:
        _WARM.set()


def run_job(job: Job) -> Any:
    """``job.work()`` in this thread, or in a forked child for a large document; raises Cancelled when the job was
    superseded first."""
    if job.cancelled.is_set():
        raise Cancelled()
    if job.lines >= FORK_MIN_LINES and hasattr(os, "fork") and sys.platform != "darwin" \
            and _WARM.wait(CHILD_TIMEOUT_S):
        got = _run_forked(job)
        if got is not _FAILED:
            return got
    return job.work()


_FAILED = object()


def _run_forked(job: Job) -> Any:
    """``job.work()`` in a forked child that sends the pickled result through a pipe; killed when the job is
    cancelled (raises Cancelled).  ``_FAILED`` when the child could not run or died (the caller then works in the
    thread).  The child leaves with ``os._exit`` and never writes to the inherited standard output (the LSP
    stream)."""
    r, w = os.pipe()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork in a process with threads
            pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return _FAILED
    if pid == 0:  # pragma: no cover - the child (coverage does not follow it)
        code = 0
        try:
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            data = pickle.dumps(("ok", job.work()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as e:  # noqa: BLE001 - reported to the parent, which decides
            data = pickle.dumps(("error", f"{type(e).__name__}: {e}"))
            code = 1
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
        finally:
            os._exit(code)
    os.close(w)
    chunks: list[bytes] = []
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    try:
        while True:
            if job.cancelled.is_set():
                os.kill(pid, signal.SIGKILL)
                raise Cancelled()
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                return _FAILED
            ready, _, _ = select.select([r], [], [], 0.02)
            if not ready:
                continue
            b = os.read(r, 1 << 20)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(r)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    try:
        kind, value = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - the child died before sending
        return _FAILED
    if kind != "ok":
        raise RuntimeError(value)
    return value


class Scheduler:
    """Debounces and runs jobs; ``done(job, result)`` is called on the event loop for the newest job of a document
    only, ``failed(job, error)`` when its work raised.  ``progress(uri)`` (optional, called on the loop when a job runs
    longer than ``PROGRESS_AFTER_S``) starts a work-done progress without waiting for the client and returns a
    callable that ends it."""

    def __init__(self, done: Callable[[Job, Any], None], failed: Callable[[Job, BaseException], None],
                 progress: Callable[[str], Callable[[], None]] | None = None,
                 workers: int = 2):
        self.done = done
        self.failed = failed
        self.progress = progress
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tmemlint-lint")
        self.latest: dict[str, Job] = {}
        self.tasks: dict[str, asyncio.Task] = {}
        self._gen = itertools.count(1)
        #: (uri, generation, seconds the work took) of each finished job, newest last (for benchmarks/tests)
        self.timings: list[tuple[str, int, float]] = []

    def submit(self, uri: str, lines: int, work: Callable[[], Any], delay: float = DEBOUNCE_S,
               meta: Any = None) -> Job:
        """Lint ``uri`` (``lines`` long) with ``work`` after ``delay`` seconds, superseding the document's earlier
        jobs."""
        job = Job(uri, next(self._gen), lines, work, meta=meta)
        self.cancel(uri)
        self.latest[uri] = job
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a direct call): work now
            self._finish(job, *self._call(job))
            return job
        self.tasks[uri] = loop.create_task(self._run(job, delay))
        return job

    def warm_up(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` (imports, caches that forked lints should inherit) in a worker; forks wait until it is
        done."""
        _WARM.clear()
        self.executor.submit(_warm_up, fn)

    def cancel(self, uri: str) -> None:
        """Supersede the document's waiting or running job (closing a document)."""
        old = self.latest.pop(uri, None)
        if old is not None:
            old.cancelled.set()
        task = self.tasks.pop(uri, None)
        if task is not None and not task.done():
            task.cancel()

    def _call(self, job: Job) -> tuple[Any, BaseException | None]:
        t0 = time.perf_counter()
        try:
            return run_job(job), None
        except Cancelled as e:
            return None, e
        except Exception as e:  # noqa: BLE001 - reported by failed()
            return None, e
        finally:
            self.timings.append((job.uri, job.generation, time.perf_counter() - t0))
            del self.timings[:-64]

    def _finish(self, job: Job, result: Any, error: BaseException | None) -> None:
        if job.cancelled.is_set() or self.latest.get(job.uri) is not job or isinstance(error, Cancelled):
            return
        if error is not None:
            self.failed(job, error)
        else:
            self.done(job, result)

    async def _run(self, job: Job, delay: float) -> None:
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            return
        if job.cancelled.is_set():
            return
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self.executor, self._call, job)
        end_progress = None
        try:
            try:
                result, error = await asyncio.wait_for(asyncio.shield(fut), PROGRESS_AFTER_S)
            except asyncio.TimeoutError:
                if self.progress is not None and not job.cancelled.is_set():
                    end_progress = self.progress(job.uri)
                result, error = await fut
        except asyncio.CancelledError:
            job.cancelled.set()
            return
        finally:
            if end_progress is not None:
                end_progress()
        self._finish(job, result, error)

    def shutdown(self) -> None:
        for uri in list(self.latest):
            self.cancel(uri)
        self.executor.shutdown(wait=False, cancel_futures=True)
