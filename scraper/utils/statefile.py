"""The state files shared by the runner and its workers: the worker record, and how every state
file under ``data_dir/state/`` is written.

``workers/{spider}-{i}of{N}.json`` (a worker's live stats) is a versioned dataclass written and
read only here, so writer and readers cannot drift apart; the runner's own records are in
runner/state.py.

Every state file is written by atomic replace after an ``fsync``: a reader, or the watchdog after
a power cut, sees the old file or the new one, never an empty or half one. Files are created
``0600`` and directories ``0700``: state holds the runner's command line and the workers' last
errors, which are nobody else's business (:func:`private_dirs`, :func:`open_private`).

Times are stored twice where a reader must judge an age: wall clock to show, and
``time.monotonic()`` (one clock for every process since boot) to judge, so a clock stepped back
or forward cannot make a healthy runner look hung.

Reading is lenient: a field of the wrong type, or missing (a file from an older version), takes
its default; a file that is not a JSON object reads as ``None``.
"""

from __future__ import annotations

import contextlib
import json
import os
import types
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

STATE_VERSION = 2
"""Bumped when a field changes meaning; readers of an older file get defaults for new fields."""
FILE_MODE = 0o600
DIR_MODE = 0o700
SHARED_FILE_MODE = 0o640
SHARED_DIR_MODE = 0o750
"""For a file one other group reads (the metrics textfile, ``metrics_group``)."""


# --- private files and directories ---------------------------------------------------------------


def private_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents, each ``0700``; existing ones are left alone."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            os.mkdir(directory, DIR_MODE)


def open_private(path: Path, flags: int = os.O_RDWR) -> int:
    """``os.open`` that creates ``path`` (and its directories) private to this user."""
    private_dirs(path.parent)
    return os.open(path, flags | os.O_CREAT, FILE_MODE)


def create_private(path: Path) -> None:
    """Make sure ``path`` exists, created ``0600``: for files another library then opens
    (SQLite keeps the mode of an existing database for its ``-wal`` and ``-shm`` files)."""
    os.close(open_private(path, os.O_RDONLY))


def write_atomic(path: Path, text: str, group: int | None = None) -> None:
    """Replace ``path`` with ``text`` in one rename, after an fsync: the old file or the new.

    ``group``: the file is ``0640`` and that group's, before it is visible (never readable by
    more than is meant, never unreadable by that group)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_TRUNC)
    try:
        if group is not None:
            os.fchown(fd, -1, group)
            os.fchmod(fd, SHARED_FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=1, default=str))


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --- the records --------------------------------------------------------------------------------


@dataclass
class WorkerRecord:
    """``state/workers/{spider}-{i}of{N}.json``: written by the worker's ``WorkerState``."""

    spider: str = ""
    shard: str = ""
    pid: int | None = None
    started_at: float = 0.0
    updated_at: float = 0.0
    finished: str | None = None  # the finish reason, once the round has closed
    items: int = 0
    dropped: int = 0
    pages: int = 0
    errors: int = 0
    last_error: str | None = None
    uss_mb: float = 0.0
    pss_mb: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)  # Scrapy's stats, scalars only
    # The round's outcome: what health is judged by (runner/core/health.py).
    requests: int = 0  # sent to the downloader, retries included
    responses: dict[str, int] = field(default_factory=dict)  # 2xx/3xx/4xx/5xx/failed → count
    ok: int = 0  # answers that carried data: 2xx, and 304 (unchanged since the last round)
    first_error: str | None = None  # the first failure's cause, one readable line
    empty_listings: int = 0  # listing pages that parsed to zero rows
    empty_listing_url: str | None = None  # the first of them
    drift_listings: int = 0  # pages whose rows lost what the list had (scraper/trending/drift.py)
    drift: str | None = None  # the first of them, one line: "markup drift: URL: what"
    # Kept across rounds and runner restarts: each round starts from the previous file's.
    items_total: int = 0  # items stored by this spider-shard, this round included
    failed_rounds: int = 0  # rounds in a row that sent requests and got no ok answer
    last_ok_at: float | None = None  # wall clock of the latest answer carrying data, any round
    # list (trending page, search query, docs site) → {"last_data_at": wall clock of its latest
    # data, "rows": rows this round}: each list's freshness (scraper/extensions/listtally.py)
    lists: dict[str, Any] = field(default_factory=dict)
    unusual: str | None = None  # what the last compared round moved past (utils/roundhistory.py)
    version: int = STATE_VERSION

    def is_round_of(self, round_pid: int | None) -> bool:
        """Written by the worker of the round whose process is ``round_pid``, not by an earlier
        round's: the pid, not a timestamp, so a clock stepped back cannot mistake one for the
        other."""
        return round_pid is not None and self.pid == round_pid


# --- reading and writing ------------------------------------------------------------------------


def read_worker(path: Path) -> WorkerRecord | None:
    data = read_json(path)
    return from_dict(WorkerRecord, data) if data is not None else None


def write_worker(path: Path, record: WorkerRecord) -> None:
    write_json_atomic(path, asdict(record))


Record = TypeVar("Record")


def from_dict(cls: type[Record], data: dict[str, Any]) -> Record:
    """``cls`` from ``data``: known fields of the right type, defaults for the rest."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name in data and _fits(data[f.name], hints[f.name]):
            values[f.name] = data[f.name]
    return cls(**values)


def _fits(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)
