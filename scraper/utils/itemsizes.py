"""The data dir's size without walking ``items/``: closed segments counted as they close.

A year of hourly segments is some 190,000 files; ``status``, ``metrics`` and the runner's
10-minute size sample each walked them all (1.4-2.0 s of CPU). A closed segment is never
written again, so its size on disk is known once, when it closes:
``state/sizes/{spider}.json`` keeps the closed segments' bytes (allocated blocks, as ``du``
and :func:`~scraper.utils.diskspace.data_size` count) and files, and every close adds its
file there, under ``state/sizes/{spider}.lock``, in the same critical section as the rename
(:func:`closing`): a recount under that lock never counts one twice. What removes or adds
closed files otherwise (the catalog's ``items_keep_days``, a file set aside, the drain of
shipped segments) drops the record (:func:`forget`), and the next reader counts that spider's
directory once. :mod:`runner.core.datasize` adds the open segments and the rest of the data
dir.

A record older than :data:`RECOUNT_EVERY` is counted again by the runner's size sample (not
by ``status``): a file you gzip or remove by hand, or a kill between a close and its record,
shows in the total within a day.

No one waits on the lock for long (:data:`LOCK_WAIT`): its holder may be stopped (SIGSTOP, ^Z, a
hung runner mid-sample), and the watchdog that is to restart that runner, a ``status`` and a
worker closing its segment must not hang behind it. A reader then counts without keeping, and a
close or a ``forget`` drops the record unlocked, so the next reader counts again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from scraper.utils.layout import DataLayout
from scraper.utils.statefile import open_private, read_json, write_json_atomic

CLOSED_SUFFIXES = (".jsonl", ".jsonl.gz")
RECOUNT_EVERY = 86400.0
"""Seconds after which the size sample counts a spider's closed segments again."""
LOCK_WAIT = 5.0
"""Seconds to wait for a spider's sizes lock; a recount of a year's segments holds it ~1 s."""
LOCK_POLL = 0.05


class SizesLockBusy(OSError):
    """The sizes lock stayed held for :data:`LOCK_WAIT` seconds."""


def blocks(path: Path) -> int:
    """``path``'s bytes on disk (allocated blocks, as ``du``), 0 when it is gone."""
    try:
        return os.lstat(path).st_blocks * 512
    except OSError:
        return 0


def _record(layout: DataLayout, spider: str) -> Path:
    return layout.state_dir / "sizes" / f"{spider}.json"


@contextmanager
def _locked(layout: DataLayout, spider: str) -> Iterator[None]:
    path = layout.state_dir / "sizes" / f"{spider}.lock"
    fd = open_private(path)
    try:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise SizesLockBusy(errno.EWOULDBLOCK, f"held for {LOCK_WAIT:g} s",
                                        str(path)) from None
                time.sleep(LOCK_POLL)
        yield
    finally:
        os.close(fd)


@contextmanager
def closing(items_dir: Path) -> Iterator[Callable[[Path], None]]:
    """Around the rename that makes a closed segment in ``items_dir`` (``{data_dir}/items/
    {spider}``): the caller passes the closed file to the function yielded, which counts it."""
    layout, spider = DataLayout(items_dir.parent.parent), items_dir.name
    added: list[Path] = []
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(_locked(layout, spider))
        except SizesLockBusy:
            yield added.append
            _record(layout, spider).unlink(missing_ok=True)
            return
        yield added.append
        record = read_json(_record(layout, spider))
        if record is None or not added:
            return  # no record yet: the first reader counts the directory, this file with it
        record["bytes"] = int(record.get("bytes", 0)) + sum(blocks(path) for path in added)
        record["files"] = int(record.get("files", 0)) + len(added)
        try:
            write_json_atomic(_record(layout, spider), record)
        except OSError:  # a full disk: the segment is closed all the same; counted later
            _record(layout, spider).unlink(missing_ok=True)


def forget(layout: DataLayout, spider: str) -> None:
    """Closed files of ``spider`` were removed or added otherwise than by a close: its record
    goes, and the next reader counts the directory again."""
    with contextlib.ExitStack() as stack:
        with contextlib.suppress(SizesLockBusy):
            stack.enter_context(_locked(layout, spider))
        _record(layout, spider).unlink(missing_ok=True)


def forget_all(layout: DataLayout) -> None:
    """:func:`forget` for every spider with a record."""
    for record in sorted((layout.state_dir / "sizes").glob("*.json")):
        forget(layout, record.stem)


def recount(layout: DataLayout, spider: str, now: float) -> dict[str, float]:
    """Count ``spider``'s closed segments (a listing of its directory) and keep the count.

    A reader (``status`` on a full disk) gets the count whatever happens to keeping it: a lock
    file that cannot be made, or a record that cannot be written, leaves the counting to the
    next reader."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(_locked(layout, spider))
            locked = True
        except OSError:
            locked = False
        total = files = 0
        with contextlib.suppress(FileNotFoundError), os.scandir(layout.items_dir(spider)) as it:
            for entry in it:
                if entry.name.endswith(CLOSED_SUFFIXES):
                    with contextlib.suppress(OSError):
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
                        files += 1
        record = {"bytes": total, "files": files, "counted_at": now}
        if locked:
            with contextlib.suppress(OSError):
                write_json_atomic(_record(layout, spider), record)
        return record


def closed_bytes(layout: DataLayout, spider: str, *, recount_after: float | None = None,
                 now: float | None = None) -> int:
    """``spider``'s closed segments' bytes on disk, from its record; counted when it has none
    (or, ``recount_after`` given, one older than that many seconds)."""
    now = time.time() if now is None else now
    record = read_json(_record(layout, spider))
    stale = record is not None and recount_after is not None and \
        now - float(record.get("counted_at", 0)) > recount_after
    if record is None or stale or not isinstance(record.get("bytes"), int):
        record = recount(layout, spider, now)
    return int(record["bytes"])
