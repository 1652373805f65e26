"""The child side of a fork: become exactly ``scrapy crawl {spider} -a shard={i}/{N}``.

Runs in the freshly forked process only. The parent holds no reactor, thread or socket, so the
child builds its own reactor and crawler from scratch through Scrapy's own command line.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

from runner.supervision.plan import WorkerSlot
from scraper.extensions.shutdowngate import hold_shutdown_signals

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
COMM_MAX = 15
"""The kernel keeps 15 bytes of a process's name (``/proc/PID/comm``, what ``ps -e`` and
``top`` show)."""


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGKILL this worker when the runner dies, however it dies: a runner
    started by the watchdog must never meet a second copy of a worker on the same stores.
    Everything a worker writes survives SIGKILL (see pipelines/itemstore.py)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the runner's stop still ends its workers
    if os.getppid() != parent_pid:  # the runner died before prctl took effect
        os._exit(1)


def name_process(spider: str, shard: str) -> None:
    """``hubcollect: docs 1/4`` in ``ps``: the full title through setproctitle when installed
    (``pip install -e '.[proctitle]'``), else ``hc docs 1/4`` as the kernel's process name."""
    try:
        from setproctitle import setproctitle  # optional: rewrites the command line ps shows
    except ImportError:
        pass
    else:
        setproctitle(f"hubcollect: {spider} {shard}")
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        name = f"hc {spider} {shard}".encode()[:COMM_MAX]
        libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: ps shows python


def run_worker(slot: WorkerSlot, parent_pid: int, log_path: str,
               wakeup_fds: tuple[int, int]) -> None:
    """Never returns: exits with the crawl's status. The config is the runner's, inherited
    with its memory (scraper.addon.use_config): nothing is read again."""
    status = 1
    try:
        die_with_parent(parent_pid)
        name_process(slot.spider, str(slot.shard))
        for fd in wakeup_fds:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        hold_shutdown_signals()  # until Scrapy can stop gracefully: see ShutdownGate
        os.setpgid(0, 0)  # a ^C in the runner's terminal reaches the runner, which stops us
        os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "scraper.settings")
        # What Scrapy prints before its log file is set up, and any crash, goes to the log too.
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null_fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null_fd, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        os.close(null_fd)
        sys.argv = slot.crawl_argv()
        from scrapy.cmdline import execute

        execute(sys.argv)
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)
