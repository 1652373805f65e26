"""Disk you can plan (growth per day, days left, the watchdog's one line) and the metrics text."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from runner.core import growth
from runner.ops.watchdog import _judge_disk
from scraper.config.collector import CollectorConfig, HealthConfig
from scraper.utils.diskspace import data_size
from scraper.utils.layout import DataLayout
from tests.support.collector import Collector

SAMPLE = re.compile(r'^hubcollect_[a-z_]+(\{([a-z]+="[^"]*",?)*\})? -?[0-9.e+]+$')


def grown(layout: DataLayout, per_day: int) -> None:
    """Samples saying the data dir grew ``per_day`` bytes a day for the last two days."""
    now = time.time()
    size = data_size(layout.root)
    samples = [[now - 2 * 86400, size - 2 * per_day], [now - 86400, size - per_day]]
    layout.state_dir.mkdir(parents=True, exist_ok=True)
    growth.growth_file(layout).write_text(json.dumps({"samples": samples}))


def test_status_and_metrics_show_growth_and_days_left(collector: Collector) -> None:
    collector.configure()
    layout = DataLayout(collector.data_dir)
    (collector.data_dir / "items").mkdir(parents=True)
    per_day = 10 * 1024**3
    grown(layout, per_day)
    status = json.loads(collector.runner("status", "--json").stdout)
    totals = status["totals"]
    assert abs(totals["growth_per_day_bytes"] - per_day) < per_day / 100
    free = growth.free_space(layout.root)
    assert abs(totals["disk_days_left"] - free / per_day) < 0.2
    text = collector.runner("status").stdout
    assert re.search(r"^disk: .* free, data \+10\.0 GB/day, [0-9,]+ days left$", text, re.M), text
    metrics = collector.runner("metrics")
    assert metrics.returncode == 0, metrics.stderr
    lines = metrics.stdout.splitlines()
    assert lines[-1] == "# EOF"
    samples = [line for line in lines if not line.startswith("#")]
    assert samples and all(SAMPLE.match(line) for line in samples), samples
    assert "hubcollect_runner_up 0" in samples
    assert any(line.startswith("hubcollect_data_growth_bytes_per_day ") for line in samples)


def test_watchdog_says_once_when_the_disk_has_few_days_left(tmp_path: Path, capsys) -> None:
    layout = DataLayout(tmp_path)
    (tmp_path / "items").mkdir()
    config = CollectorConfig(data_dir=tmp_path, health=HealthConfig(disk_days_left=10**9))
    grown(layout, 1024**3)
    _judge_disk(layout, config)
    first = capsys.readouterr().out
    assert re.fullmatch(r"collector disk: full in [0-9.]+ days \(.* free, data grows "
                        r"1\.0 GB/day\)\n", first), first
    _judge_disk(layout, config)
    assert capsys.readouterr().out == ""  # said once while it persists
    grown(layout, 0)
    _judge_disk(layout, config)
    _judge_disk(layout, config)
    grown(layout, 1024**3)
    _judge_disk(layout, config)
    assert capsys.readouterr().out.count("collector disk: full in") == 1  # again, once


def test_metrics_group_lets_that_group_read_the_textfile_and_nobody_else(tmp_path: Path) -> None:
    import grp
    import os
    import stat

    import pytest

    from runner.status.metrics import MetricsWriter
    from scraper.config.collector import ConfigError, parse_config

    gid = next((g for g in os.getgroups() if g != os.getegid()), os.getegid())
    textfile_dir = tmp_path / "textfile" / "hubcollect"
    config = parse_config(f"data_dir: data\nmetrics_dir: {textfile_dir}\n"
                          f"metrics_group: {grp.getgrgid(gid).gr_name}\n", "c.yaml", tmp_path)
    assert config.metrics_group == gid
    MetricsWriter(DataLayout(config.data_dir), config).write()
    prom = (textfile_dir / "hubcollect.prom").stat()
    assert (stat.S_IMODE(prom.st_mode), prom.st_gid) == (0o640, gid)
    made = textfile_dir.stat()
    assert (stat.S_IMODE(made.st_mode), made.st_gid) == (0o750, gid)
    private = parse_config("data_dir: data\n", "c.yaml", tmp_path)  # the default: 0600
    MetricsWriter(DataLayout(private.data_dir), private).write()
    default = private.data_dir / "state" / "metrics" / "hubcollect.prom"
    assert stat.S_IMODE(default.stat().st_mode) == 0o600
    with pytest.raises(ConfigError) as raised:
        parse_config("metrics_group: no-such-group-here\n", "c.yaml", tmp_path)
    assert str(raised.value) == ("c.yaml: metrics_group: 'no-such-group-here' is not a group of "
                                 "this machine (see /etc/group), e.g. the one node_exporter "
                                 "runs as")
