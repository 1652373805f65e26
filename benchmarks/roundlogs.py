"""What one round of each spider writes to its log, taken from a real round.

``python -m runner --once --workers 3`` (a shard of each spider) against the fake GitHub and the
fake docs host on loopback (``tests/support/fakes``), each spider at its default start list
(trending's 12 lists, search's two queries; docs a fake site of :data:`DOCS_SITE_PAGES` pages),
GitHub's pace and limits opened up so the round takes seconds. The text each worker's log got
is a round's log, which the generated history appends at every round it writes
(:mod:`benchmarks.historywriter`). The runner's own log gets no line per round (only its start,
its plan and its stop), so a history adds nothing to it.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from benchmarks.common import REPO_ROOT, collector_env
from tests.support.fakes.launcher import start_fake_docs, start_fake_github

DOCS_SITE_PAGES = 40


def real_round_logs(timeout: float = 300) -> dict[str, str]:
    """``{spider: the text one round of it wrote to its log}``."""
    with tempfile.TemporaryDirectory(prefix="round-logs-") as tmp:
        root = Path(tmp)
        with start_fake_github(root / "github", search_limit=10_000) as github, \
                start_fake_docs(root / "docs", sites=1, pages=DOCS_SITE_PAGES) as docs:
            data = root / "data"
            config = root / "collector.yaml"
            config.write_text(yaml.safe_dump({
                "data_dir": str(data),
                "github": {"web_url": github.url("web"), "api_url": github.url("api"),
                           "web_min_interval": 0,
                           "limits": {"search": {"limit": 10_000, "window": 60}}},
                "spiders": {"docs": {"start_urls": [f"{docs.url()}/site0/"]}},
            }))
            argv = [sys.executable, "-m", "runner", "--once", "--workers", "3",
                    "--config", str(config)]
            done = subprocess.run(argv, cwd=REPO_ROOT, env=collector_env(config),
                                  capture_output=True, text=True, timeout=timeout)
            if done.returncode:
                raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: "
                                   f"{done.stderr[-2000:]}")
        logs = data / "logs"
        texts = {path.name.split("-")[0]: path.read_text(encoding="utf-8")
                 for path in logs.glob("*-*of*.log")}
    missing = {"trending", "search", "docs"} - set(texts)
    if missing:
        raise RuntimeError(f"the real round wrote no log for {', '.join(sorted(missing))}")
    return texts
