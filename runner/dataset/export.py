"""``python -m runner export --format csv|parquet|jsonl --out DIR [--table NAME]``.

One file per data table (``DIR/{table}.{csv,parquet,jsonl}``), streamed from the catalog in
batches, each written under a temporary name and renamed when whole. ``--format llms`` writes
the docs sites for LLMs instead (runner/dataset/llms.py), ``--date`` as they were that day.

Parquet goes through pyarrow (the ``export`` extra) rather than DuckDB: on a 2 GB box the
export must stream, and pyarrow's ``ParquetWriter`` takes one record batch at a time from the
sqlite3 cursor (memory = one batch), while DuckDB reads SQLite only through its sqlite
extension, which it downloads at first use (not possible offline) and whose default memory
limit is 80% of RAM. pyarrow is a single wheel with no further dependencies.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Callable, Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

from runner.dataset.access import read_into
from runner.dataset.schema import DATA_TABLES, TABLE_BY_NAME
from runner.usage import PROG as RUNNER
from runner.usage import USAGE_ERROR
from scraper.config import CollectorConfig
from scraper.layout import DataLayout

PROG = f"{RUNNER} export"
FORMATS = ("csv", "parquet", "jsonl", "llms")
BATCH = 10_000
PARQUET_HINT = "--format parquet needs pyarrow: pip install -e '.[export]'"


def register(parser: argparse.ArgumentParser,
             add_config_option: Callable[[argparse.ArgumentParser], None]) -> None:
    parser.description = "Write the catalog's tables to DIR, one file per table."
    add_config_option(parser)
    parser.add_argument("--format", choices=FORMATS, required=True)
    parser.add_argument("--out", required=True, metavar="DIR")
    parser.add_argument("--table", choices=DATA_TABLES, metavar="NAME",
                        help=f"only this table: {', '.join(DATA_TABLES)}")
    parser.add_argument("--date", type=snapshot_date, metavar="YYYY-MM-DD",
                        help="--format llms: each page as it was at the end of that day (UTC), "
                             "or at a moment given as YYYY-MM-DDTHH:MM:SSZ")
    parser.set_defaults(handler=cmd_export)


def snapshot_date(value: str) -> str:
    """The moment a snapshot is taken at, as the catalog writes times (ISO-8601 UTC)."""
    try:
        if len(value) == 10:
            return f"{date.fromisoformat(value).isoformat()}T23:59:59Z"
        if len(value) == 20 and value.endswith("Z"):
            datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
            return value
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{value!r} is not a date: give YYYY-MM-DD (the end of "
                                     "that day, UTC) or YYYY-MM-DDTHH:MM:SSZ")


def cmd_export(args: argparse.Namespace, config: CollectorConfig) -> int:
    if args.format == "llms":
        return cmd_export_llms(args, config)
    if args.date:
        print(f"{PROG}: --date is for --format llms (the tables hold every date already)",
              file=sys.stderr)
        return USAGE_ERROR
    if args.format == "parquet":
        try:
            import pyarrow.parquet  # noqa: F401 - present and importable, before any work
        except ImportError:
            print(f"{PROG}: {PARQUET_HINT}", file=sys.stderr)
            return USAGE_ERROR

    def work(conn: Any, out: Path) -> None:
        for table in [args.table] if args.table else DATA_TABLES:
            path, rows = export_table(conn, table, args.format, out)
            print(f"{table}: {rows:,} rows -> {path}")

    return read_into(DataLayout(config.data_dir), Path(args.out), PROG, work)


def cmd_export_llms(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.dataset.llms import TOKEN_ESTIMATE, export_llms

    def work(conn: Any, out: Path) -> None:
        sites = export_llms(conn, out, config.docs.start_entries(), args.date)
        for prefix, directory, pages, tokens in sites:
            print(f"{prefix}: {pages:,} pages, about {tokens:,} tokens -> {directory}/llms.txt")
        if not sites:
            print(f"no docs pages in the catalog{' by ' + args.date if args.date else ''}")
        else:
            print(f"tokens: estimated as {TOKEN_ESTIMATE}, no tokenizer")

    return read_into(DataLayout(config.data_dir), Path(args.out), PROG, work)


def _batches(conn: Any, table: str) -> Iterator[list[tuple[Any, ...]]]:
    # The key order: the same catalog always exports the same bytes.
    cursor = conn.execute(f"SELECT * FROM {table} ORDER BY {', '.join(TABLE_BY_NAME[table].key)}")
    while batch := cursor.fetchmany(BATCH):
        yield batch


def export_table(conn: Any, table: str, fmt: str, out: Path) -> tuple[Path, int]:
    """Write one table; returns (its file, rows written)."""
    path = out / f"{table}.{fmt}"
    tmp = path.with_name(f".{path.name}.tmp")
    columns = TABLE_BY_NAME[table].column_names
    writer = {"csv": _write_csv, "jsonl": _write_jsonl, "parquet": _write_parquet}[fmt]
    rows = writer(tmp, table, columns, _batches(conn, table))
    os.replace(tmp, path)
    return path, rows


def _write_csv(path: Path, table: str, columns: list[str],
               batches: Iterator[list[tuple[Any, ...]]]) -> int:
    rows = 0
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for batch in batches:
            writer.writerows(batch)
            rows += len(batch)
    return rows


def _write_jsonl(path: Path, table: str, columns: list[str],
                 batches: Iterator[list[tuple[Any, ...]]]) -> int:
    rows = 0
    with open(path, "w", encoding="utf-8") as handle:
        for batch in batches:
            for row in batch:
                handle.write(json.dumps(dict(zip(columns, row, strict=True)),
                                        ensure_ascii=False) + "\n")
            rows += len(batch)
    return rows


def _write_parquet(path: Path, table: str, columns: list[str],
                   batches: Iterator[list[tuple[Any, ...]]]) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"INTEGER": pa.int64(), "REAL": pa.float64(), "TEXT": pa.string()}
    schema = pa.schema([(name, types[kind.split()[0]])
                        for name, kind, _ in TABLE_BY_NAME[table].columns])
    rows = 0
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for batch in batches:
            arrays = [pa.array([row[i] for row in batch], type=field.type)
                      for i, field in enumerate(schema)]
            writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
            rows += len(batch)
    return rows
