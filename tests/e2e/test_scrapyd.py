"""scrapyd users: ``scrapyd-deploy``, then ``schedule.json`` with ``shard=0/4``, against a real
scrapyd on loopback, collects exactly what ``scrapy crawl docs -a shard=0/4`` does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.support.collector import REPO_ROOT, Collector, free_port, wait_for

SCRAPYD_BIN = Path(sys.executable).with_name("scrapyd")
DEPLOY_BIN = Path(sys.executable).with_name("scrapyd-deploy")
PROJECT_FILES = ("scraper", "spiders", "pipelines", "runner", "scrapy.cfg", "pyproject.toml",
                 "README.md")


class Scrapyd:
    def __init__(self, home: Path) -> None:
        self.home = home
        home.mkdir(parents=True)
        self.url = f"http://127.0.0.1:{free_port()}/"
        port = self.url.rsplit(":", 1)[1].strip("/")
        (home / "scrapyd.conf").write_text(
            "[scrapyd]\nbind_address = 127.0.0.1\n"
            f"http_port = {port}\npoll_interval = 0.2\nmax_proc = 2\n"
            "eggs_dir = eggs\nlogs_dir = logs\ndbs_dir = dbs\n")
        self.out = open(home / "scrapyd.out", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen([str(SCRAPYD_BIN)], cwd=home, stdout=self.out,
                                        stderr=subprocess.STDOUT)
        wait_for(self._up, 30, "scrapyd to answer daemonstatus.json", interval=0.2)

    def _up(self) -> bool:
        assert self.process.poll() is None, (self.home / "scrapyd.out").read_text()
        try:
            return requests.get(self.url + "daemonstatus.json", timeout=2).ok
        except requests.ConnectionError:
            return False

    def api(self, endpoint: str, **data: Any) -> dict[str, Any]:
        if data:
            answer = requests.post(self.url + endpoint, data=data, timeout=30)
        else:
            answer = requests.get(self.url + endpoint, params={"project": "hubcollect"},
                                  timeout=30)
        body = answer.json()
        assert body["status"] == "ok", body
        return body

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.out.close()


@pytest.fixture
def scrapyd(tmp_path: Path) -> Iterator[Scrapyd]:
    server = Scrapyd(tmp_path / "scrapyd")
    try:
        yield server
    finally:
        server.stop()


def deploy(project_copy: Path, url: str) -> str:
    """``scrapyd-deploy`` from a copy of the project whose ``[deploy]`` points at ``url`` (it
    writes a setup.py beside scrapy.cfg: not in the source tree)."""
    for name in PROJECT_FILES:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, project_copy / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, project_copy / name)
    cfg = project_copy / "scrapy.cfg"
    cfg.write_text(cfg.read_text().replace("http://localhost:6800/", url))
    result = subprocess.run([str(DEPLOY_BIN)], cwd=project_copy, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


def collected(collector: Collector) -> list[dict[str, Any]]:
    """The docs items as written, without the moment they were collected."""
    rows = [{k: v for k, v in item.items() if k != "collected_at"}
            for item in collector.items("docs")]
    return sorted(rows, key=lambda row: row["url"])


@pytest.mark.timeout(180)
def test_scrapyd_schedule_with_shard_collects_what_scrapy_crawl_does(
        tmp_path: Path, scrapyd: Scrapyd, fake_docs_factory) -> None:
    docs = fake_docs_factory(sites=4, pages=6)
    urls = [f"{docs.url()}/site{i}/" for i in range(4)]
    by_hand, by_scrapyd = Collector(tmp_path / "by-hand"), Collector(tmp_path / "by-scrapyd")
    by_hand.configure(docs_urls=urls)
    by_scrapyd.configure(docs_urls=urls)

    out = deploy(tmp_path / "project", scrapyd.url)
    assert '"spiders": 3' in out, out
    assert not (REPO_ROOT / "setup.py").exists()
    listed = scrapyd.api("listspiders.json")
    assert sorted(listed["spiders"]) == ["docs", "search", "trending"]
    # The config reaches the crawl as a setting (scrapyd passes -s), scrapyd's own -a _job too.
    job = scrapyd.api("schedule.json", project="hubcollect", spider="docs", shard="0/4",
                      setting=f"COLLECTOR_CONFIG={by_scrapyd.config_path}")["jobid"]

    def finished() -> dict[str, Any] | None:
        jobs = scrapyd.api("listjobs.json")
        return next((j for j in jobs["finished"] if j["id"] == job), None)

    wait_for(finished, 90, "the scrapyd job to finish", interval=0.3)
    log = scrapyd.home / "logs" / "hubcollect" / "docs" / f"{job}.log"
    text = log.read_text()
    assert "Spider closed (finished)" in text, text[-3000:]
    assert "Traceback" not in text and "not an argument" not in text, text[-3000:]

    result = by_hand.crawl("docs", "0/4")
    assert result.returncode == 0, result.stderr[-2000:]
    expected = collected(by_hand)
    assert expected and {row["shard"] for row in expected} == {"0/4"}
    assert all(row["url"].startswith(urls[0]) for row in expected)
    assert collected(by_scrapyd) == expected
    # The same shard's bookkeeping as a runner's worker: its state file and item file names.
    state = json.loads((by_scrapyd.data_dir / "state" / "workers" / "docs-0of4.json").read_text())
    assert state["stats"]["item_scraped_count"] == len(expected)
    assert [p.name.split("-2")[0] for p in by_scrapyd.item_files("docs")] == ["docs-0of4"]
