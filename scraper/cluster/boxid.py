"""Which box this is, for the cluster's dataset: a random id drawn once and kept in ``state/``.

The id names the box in shipped entries and in the dataset box's record, so it must differ
between any two boxes and never change on one: it is drawn at random the first time
(``state/box-id``, written atomically) rather than derived from the host name and data dir (two
cloned images share both; a renamed host would change it). The host name and data dir are for
display only. The id is registered in Redis (``{p}:dataset:ids``, HSETNX, with the data dir's
path and the OS install's machine id): a second data dir with the same id — a copied ``state/``
— is found there and refused in one line.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scraper.utils.layout import DataLayout
from scraper.utils.statefile import private_dirs, write_atomic

ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9_.]+)*$", re.IGNORECASE)


class BoxIdClash(Exception):
    """Another data dir registered this box's id: the one line that says so."""


def legacy_id(host: str, data_dir: Path | str) -> str:
    """The id a box had before ids were drawn (host name + digest of its data dir): kept by a
    box that already shipped or holds the dataset, so its role and ledgers stay its own."""
    safe = re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9._-]", "_", host)).strip("-") or "box"
    digest = hashlib.sha1(str(Path(data_dir).resolve()).encode()).hexdigest()[:8]
    return f"{safe}-{digest}"


def _machine() -> str:
    """A digest of the OS install's id (a clone that regenerated it is told apart), or ''. The
    id itself is not for others to read (machine-id(5)): only an application-keyed digest of
    it leaves the box."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            raw = Path(path).read_text(encoding="ascii").strip()
        except (OSError, ValueError):
            continue
        return hashlib.sha256(f"hubcollect box {raw}".encode()).hexdigest()[:16]
    return ""


@dataclass(frozen=True, slots=True)
class Box:
    id: str
    name: str
    """``host:data_dir``, as ``status --cluster`` names it (display only)."""

    @classmethod
    def here(cls, layout: DataLayout) -> Box:
        """This data dir's box; draws and keeps its id the first time. Raises OSError."""
        host = socket.gethostname()
        path = layout.box_id_file
        try:
            kept = path.read_text(encoding="ascii").strip()
        except (FileNotFoundError, ValueError):
            kept = ""
        if not ID_RE.fullmatch(kept):
            if layout.dataset_role.exists() or layout.shipped_dir.exists():
                kept = legacy_id(host, layout.root)
            else:
                kept = secrets.token_hex(8)
            private_dirs(path.parent)
            write_atomic(path, kept + "\n")
        return cls(kept, f"{host}:{Path(layout.root).resolve()}")

    def register(self, client: Any, ids_key: str) -> None:
        """Claim the id in Redis; :class:`BoxIdClash` when another data dir holds it (its path,
        or the OS install's id, differs; the host name does not count: a renamed host is the
        same box)."""
        mine = f"{self.name.partition(':')[2] or self.name} {_machine()}".strip()
        if client.hsetnx(ids_key, self.id, mine):
            return
        held = client.hget(ids_key, self.id)
        theirs = (held or b"").decode("utf-8", "replace")
        if theirs == mine:
            return
        raise BoxIdClash(
            f"box id {self.id} (state/box-id) is also the id of {theirs.split(' ')[0]} in Redis "
            "(a copied state/ or a cloned image?): delete state/box-id here so this box draws "
            f"its own id, or, if this is that data dir moved here, HDEL {ids_key} {self.id}")
