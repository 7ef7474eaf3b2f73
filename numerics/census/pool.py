r"""The census's machinery, shared by the transformers census (:mod:`numerics.census.run`) and timm's
(:mod:`numerics.census.timm`): the budget of one piece of work (:func:`arm` / :func:`disarm`: CPU
seconds of the process, every thread's, and a wall-clock backstop, either raising :class:`Timeout`),
the forked worker processes (:func:`run_tasks`, :func:`pool`: a worker dies with its parent, under an
address-space limit; an exception in the caller kills the workers at once; a worker that dies loses
only its own task), and :func:`write_files` (each file whole or not there)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

__all__ = [
    "Clock",
    "Timeout",
    "arm",
    "disarm",
    "timed_out",
    "max_jobs",
    "children_cpu",
    "run_tasks",
    "pool",
    "worker_init",
    "WORKER_MEMORY",
    "write_files",
]


class Timeout(BaseException):
    """A budget ran out (``clock``: ``"CPU"`` or ``"wall"``). A ``BaseException``: no ``except
    Exception`` of the code it interrupts swallows it."""

    def __init__(self, clock: str):
        super().__init__(clock)
        self.clock = clock


def _on_timer(signum, frame):
    raise Timeout("CPU" if signum == signal.SIGPROF else "wall")


def timed_out(exc: Timeout, timeout: float, wall_factor: float, what: str = "") -> str:
    """The reason of a row whose budget (``timeout`` CPU seconds, ``wall_factor`` times that in wall
    time) ran out while doing ``what``."""
    if exc.clock == "CPU":
        return f"timed out after {timeout:g} s CPU{what}"
    return f"timed out after {wall_factor * timeout:g} s wall without using its {timeout:g} s CPU budget{what}"


def arm(seconds: float, wall_factor: float):
    """Start the budget: ``seconds`` of this process's CPU time (``ITIMER_PROF``: every thread's, so
    torch's intra-op threads count) and ``wall_factor`` times that in wall time (``ITIMER_REAL``);
    either raises :class:`Timeout`. ``None`` off the main thread (no budget there)."""
    try:
        handlers = (signal.signal(signal.SIGPROF, _on_timer), signal.signal(signal.SIGALRM, _on_timer))
    except ValueError:  # not the main thread: no timeout
        return None
    start = (time.process_time(), time.monotonic())
    prev = (signal.setitimer(signal.ITIMER_PROF, seconds), signal.setitimer(signal.ITIMER_REAL, wall_factor * seconds))
    return handlers, prev, start


def disarm(armed) -> None:
    """Stop the budget; the caller's own handlers and timers go on where they were (less the time
    spent here). A tick that lands while this runs is dropped: the work it would stop is done."""
    if armed is None:
        return
    handlers, prev, start = armed
    while True:
        try:
            signal.signal(signal.SIGPROF, signal.SIG_IGN)
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            break
        except Timeout:
            continue
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.setitimer(signal.ITIMER_REAL, 0)
    for sig, handler in zip((signal.SIGPROF, signal.SIGALRM), handlers, strict=True):
        signal.signal(sig, signal.SIG_DFL if handler is None else handler)  # None: not set from Python
    spent = (time.process_time() - start[0], time.monotonic() - start[1])
    for which, (left, every), used in zip((signal.ITIMER_PROF, signal.ITIMER_REAL), prev, spent, strict=True):
        if left > 0:
            signal.setitimer(which, max(left - used, 1e-6), every)


def max_jobs() -> int:
    """The most worker processes a census takes: the CPUs this process may run on
    (``os.sched_getaffinity``; ``os.cpu_count()`` where that is missing). More workers would only share
    those CPUs, each holding its own tiny models (about 0.5 GB)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - a platform without affinity
        return max(1, os.cpu_count() or 1)


def children_cpu() -> float:
    """CPU seconds of this process's waited-for children (user + system)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Clock:
    """A run's clock: started at construction; :meth:`facts` is ``(date, wall seconds, CPU seconds)`` since
    then, the CPU time of this process and of its waited-for worker processes."""

    def __init__(self) -> None:
        self.wall0, self.cpu0, self.child0 = time.perf_counter(), time.process_time(), children_cpu()

    def facts(self) -> tuple[str, float, float]:
        import datetime as _dt

        cpu = time.process_time() - self.cpu0 + children_cpu() - self.child0
        return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), time.perf_counter() - self.wall0, cpu


def run_tasks(tasks: list, jobs: int, work, lost):
    """``work(task)`` (a list of rows) of each task, in ``jobs`` forked worker processes (1: here; never
    more processes than tasks), yielded as they finish. A worker that dies (a crash inside a kernel)
    loses nothing else: the tasks it had not finished are rerun one per fresh process, and the one
    that kills its process yields ``lost(task)`` (its rows, declined with that reason). Closing the
    generator early, or an exception while it waits (SIGINT, SIGTERM), kills the workers at once
    (:func:`pool`). ``work`` must be picklable by reference (a module-level function)."""
    if jobs <= 1:
        for t in tasks:
            yield work(t)
        return
    if not tasks:
        return
    import concurrent.futures as cf
    from concurrent.futures.process import BrokenProcessPool

    left = list(tasks)
    with pool(min(jobs, len(tasks))) as ex:
        futs = {ex.submit(work, t): t for t in tasks}
        try:
            for f in cf.as_completed(futs):
                yield f.result()
                left.remove(futs[f])
        except BrokenProcessPool:
            pass
    for t in left:  # only after a worker died: one process per task
        with pool(1) as ex:
            try:
                yield ex.submit(work, t).result()
            except BrokenProcessPool:
                yield lost(t)


@contextlib.contextmanager
def pool(workers: int):
    """A pool of ``workers`` forked census workers (:func:`worker_init`). Left normally: shut down
    after its tasks. Left by an exception (``KeyboardInterrupt``, a SIGTERM handler's ``SystemExit``,
    ``GeneratorExit``): its workers are killed at once and its queued tasks cancelled, nothing waited for."""
    import concurrent.futures as cf
    import multiprocessing as mp

    ex = cf.ProcessPoolExecutor(
        workers, mp_context=mp.get_context("fork"), initializer=worker_init, initargs=(os.getpid(),)
    )
    try:
        yield ex
    except BaseException:
        procs = list((getattr(ex, "_processes", None) or {}).values())  # Python < 3.14 has no kill_workers()
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.kill()
        ex.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.join(5)
        raise
    ex.shutdown(wait=True)


#: address-space limit of a census worker: a family whose tiny model still allocates more fails that
#: allocation (a row saying so) instead of swapping the machine
WORKER_MEMORY = 6 * 2**30


def worker_init(parent: int | None = None) -> None:
    """A census worker's start: SIGINT ignored (the parent's to handle), SIGTERM default, dies with
    ``parent``, memory limited to :data:`WORKER_MEMORY`, one torch thread, library warnings off."""
    import resource
    import warnings

    import torch

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the parent's to handle: it kills the workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler (inherited by the fork)
    if parent is not None:
        _die_with(parent)
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        lim = WORKER_MEMORY if hard == resource.RLIM_INFINITY else min(WORKER_MEMORY, hard)
        resource.setrlimit(resource.RLIMIT_AS, (lim, hard))
    except (ValueError, OSError):  # pragma: no cover - a platform without the limit
        pass

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    try:
        import transformers

        transformers.logging.set_verbosity_error()
    except Exception:  # pragma: no cover
        pass


def _die_with(parent: int) -> None:
    """This worker ends when the process ``parent`` does (killed, even by SIGKILL): the kernel's
    ``PR_SET_PDEATHSIG`` on Linux, else a thread that watches the parent id twice a second."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            if ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0:  # PR_SET_PDEATHSIG
                if os.getppid() != parent:  # it died before the request took hold
                    os._exit(1)
                return
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl: the watchdog below
            pass

    def watch() -> None:  # pragma: no cover - platforms without PR_SET_PDEATHSIG
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="census-parent-watch", daemon=True).start()


def write_files(out: list[tuple[Path, str]]) -> list[Path]:
    """Write each ``(path, text)``: each file goes through a temporary file in its own directory,
    renamed over the target when all are written (``os.replace``): an interruption leaves every file as
    it was, never half-written. Returns the paths written."""
    mask = os.umask(0o22)
    os.umask(mask)
    temps: list[str] = []
    try:
        for path, text in out:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            temps.append(tmp)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, 0o666 & ~mask)  # the mode a plain open() would give, not mkstemp's 0600
        for (path, _), tmp in zip(out, temps, strict=True):
            os.replace(tmp, path)
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return [path for path, _ in out]
