"""The config a run uses, resolved and without secrets: ``state/config.json``.

The runner writes it at start and after each accepted reload. A process the runner starts by
exec (the catalog child) is given it as its ``--config``, and ``status`` and the watchdog judge
the run by it (:func:`run_config`), so each runs on what the runner runs on, not on whatever the
file says by then. It is JSON, which is YAML: ``load_config`` reads it like collector.yaml;
:func:`run_config` reads it as JSON, with the same validation. Left out: the token (only the
name of its variable is kept, as in the file), the Redis password (masked) and the webhook URL
(which often carries a key).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any

from scraper.config.collector import (
    SPIDER_NAMES,
    CollectorConfig,
    ConfigError,
    Secret,
    load_config_record,
)
from scraper.utils.layout import DataLayout
from scraper.utils.statefile import write_json_atomic
from scraper.utils.urlmask import mask_url

LEFT_OUT = ("source", "token")


def config_record(config: CollectorConfig) -> dict[str, Any]:
    """``config`` in collector.yaml's shape, every value resolved, no secret."""
    record = {name: _plain(getattr(config, name)) for name in
              (f.name for f in dataclasses.fields(config)) if name not in LEFT_OUT}
    record["spiders"] = {name: record.pop(name) for name in SPIDER_NAMES}
    record["data_dir"] = str(config.data_dir.absolute())
    if config.redis_url:
        record["redis_url"] = mask_url(config.redis_url)
    record["notify"] = {"webhook_url": None}
    return record


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name not in LEFT_OUT}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, Secret):  # never reached: a Secret field is left out above
        raise TypeError("a secret in the resolved config")
    return value if value is None or isinstance(value, str | int | float | bool) else str(value)


def write_resolved(layout: DataLayout, config: CollectorConfig) -> None:
    layout.state_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(layout.resolved_config, config_record(config))


def run_config(config: CollectorConfig) -> CollectorConfig:
    """The config of the run on ``config.data_dir`` (its thresholds, intervals, plan): its
    resolved record when the runner wrote one, with ``config``'s Redis URL and webhook (the
    record has neither); ``config`` itself when there is no readable record."""
    path = DataLayout(config.data_dir).resolved_config
    if not path.is_file():
        return config
    try:
        recorded = load_config_record(path)
    except ConfigError:
        return config
    return replace(recorded, redis_url=config.redis_url, notify=config.notify,
                   source=config.source)
