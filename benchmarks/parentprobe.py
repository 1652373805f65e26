"""``python -m benchmarks.parentprobe ARGS``: ``python -m runner ARGS`` with a sampling thread that
says where the parent's memory is: glibc's heap (``mallinfo2``: bytes mapped by ``brk``, in use,
free, and in blocks ``mmap``-ed alone), Python's small-object allocator (arenas now and at most,
allocated blocks) and RSS, every ``$HUBCOLLECT_PROBE_EVERY`` seconds (10) as a JSON line appended
to ``$HUBCOLLECT_PROBE_OUT`` (with ``$HUBCOLLECT_PROBE_COLLECT=1``, after a full garbage
collection: live objects only). For ``python -m benchmarks.parent --allocator`` only: it adds a
thread to the parent, and the arenas are read from ``sys._debugmallocstats()``, which prints to
file descriptor 2, borrowed for the moment it takes (a line the runner writes then is lost).
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import runpy
import sys
import tempfile
import threading
import time
from typing import Any

_MALLINFO2 = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
              "fordblks", "keepcost")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2]


def _malloc() -> dict[str, int]:
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return {"heap_bytes": info.arena, "heap_in_use": info.uordblks, "heap_free": info.fordblks,
            "mmapped_bytes": info.hblkhd}


def _pymalloc() -> dict[str, int]:
    with tempfile.TemporaryFile("w+") as out:
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        stats = {}
        for line in out:
            if line.startswith(("# arenas allocated current", "# arenas highwater mark")):
                key, _, value = line.rpartition("=")
                stats[key.strip("# ").strip().replace(" ", "_")] = int(value.replace(",", ""))
    return {"arenas": stats.get("arenas_allocated_current", -1),
            "arenas_highwater": stats.get("arenas_highwater_mark", -1),
            "blocks": sys.getallocatedblocks()}


def _rss() -> dict[str, int]:
    with open("/proc/self/status") as status:
        return {key: int(value.split()[0]) for key, _, value in
                (line.partition(":") for line in status) if key in ("VmRSS", "RssAnon")}


def sample(collect: bool = False) -> dict[str, Any]:
    # Collecting first counts live objects only: blocks that rise between full collections
    # may be cyclic garbage the next one frees.
    collected = gc.collect() if collect else None
    return {"t": time.time(), **_rss(), **_malloc(), **_pymalloc(), "collected": collected,
            "collections": [generation["collections"] for generation in gc.get_stats()]}


def _loop(path: str, every: float, collect: bool) -> None:
    while True:
        time.sleep(every)
        with open(path, "a") as out:
            out.write(json.dumps(sample(collect)) + "\n")


def main() -> None:
    path = os.environ["HUBCOLLECT_PROBE_OUT"]
    every = float(os.environ.get("HUBCOLLECT_PROBE_EVERY", "10"))
    collect = os.environ.get("HUBCOLLECT_PROBE_COLLECT") == "1"
    threading.Thread(target=_loop, args=(path, every, collect), daemon=True).start()
    sys.argv = ["runner", *sys.argv[1:]]
    runpy.run_module("runner", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
