"""``python -m runner export --format csv|parquet|jsonl --out DIR [--table NAME]``.

One file per data table (``DIR/{table}.{csv,parquet,jsonl}``), streamed from the catalog in
batches, each written under a temporary name and renamed when whole. ``--format llms`` writes
the docs sites for LLMs instead (runner/catalog/llms.py), ``--date`` as they were that day.

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
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from runner.catalog.access import open_fresh, read_into
from runner.catalog.schema import DATA_TABLES, TABLE_BY_NAME
from runner.core.usage import PROG as RUNNER
from runner.core.usage import USAGE_ERROR
from scraper.config.collector import CollectorConfig
from scraper.utils.layout import DataLayout

PROG = f"{RUNNER} export"
FORMATS = ("csv", "parquet", "jsonl", "llms")
BATCH = 10_000
PARQUET_HINT = "--format parquet needs pyarrow: pip install -e '.[export]'"


class ExportError(ValueError):
    """A catalog cell the export cannot write as its type: the message is the one line."""


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

    try:
        return read_into(DataLayout(config.data_dir), Path(args.out), PROG, work)
    except ExportError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1


def cmd_export_llms(args: argparse.Namespace, config: CollectorConfig) -> int:
    from runner.catalog.llms import TOKEN_ESTIMATE, export_llms

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
    try:
        rows = writer(tmp, table, columns, _batches(conn, table))
    except ExportError:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return path, rows


def _write_csv(path: Path, table: str, columns: list[str],
               batches: Iterator[list[tuple[Any, ...]]]) -> int:
    rows = 0
    with open_fresh(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for batch in batches:
            writer.writerows([[inert(cell) for cell in row] for row in batch])
            rows += len(batch)
    return rows


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a CSV cell as a formula (OWASP, "CSV Injection")."""


def inert(cell: Any) -> Any:
    """A text cell a spreadsheet would run as a formula, with a ``'`` in front (OWASP's rule),
    so it shows as the text it is; numbers and other text are left as they are."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


def _write_jsonl(path: Path, table: str, columns: list[str],
                 batches: Iterator[list[tuple[Any, ...]]]) -> int:
    rows = 0
    with open_fresh(path, "w", encoding="utf-8") as handle:
        for batch in batches:
            for row in batch:
                handle.write(json.dumps(dict(zip(columns, row, strict=True)),
                                        ensure_ascii=False) + "\n")
            rows += len(batch)
    return rows


MOMENT_COLUMNS = ("first_seen", "last_seen", "last_changed", "hour")
"""Text columns holding an ISO-8601 UTC moment besides the ``*_at`` ones: Parquet gets them
as ``timestamp[us, UTC]``, which pandas, DuckDB and Spark read as times, not strings."""

LIST_COLUMNS = ("topics",)
"""Text columns holding a JSON list of names: Parquet gets them as ``list<string>``."""


def parquet_type(name: str, kind: str) -> Any:
    """The Arrow type of catalog column ``name`` (SQLite type ``kind``)."""
    import pyarrow as pa

    if name.endswith("_at") or name in MOMENT_COLUMNS:
        return pa.timestamp("us", tz="UTC")
    if name in LIST_COLUMNS:
        return pa.list_(pa.string())
    return {"INTEGER": pa.int64(), "REAL": pa.float64(), "TEXT": pa.string()}[kind.split()[0]]


def parquet_value(table: str, name: str, value: Any, kind: Any) -> Any:
    """A catalog cell as the Python value pyarrow builds ``kind`` from; ExportError naming the
    cell when a moment or a list is not one."""
    import pyarrow as pa

    if value is None or not isinstance(kind, pa.TimestampType | pa.ListType):
        return value
    try:
        if isinstance(kind, pa.TimestampType):
            return datetime.fromisoformat(value).astimezone(UTC)
        names = json.loads(value)
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise ValueError("not a list of names")
        return names
    except (TypeError, ValueError) as exc:
        wanted = ("an ISO-8601 time" if isinstance(kind, pa.TimestampType)
                  else "a JSON list of names")
        raise ExportError(f"{table}.{name}: {str(value)[:60]!r} is not {wanted} ({exc})"
                          ) from None


def _write_parquet(path: Path, table: str, columns: list[str],
                   batches: Iterator[list[tuple[Any, ...]]]) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(name, parquet_type(name, kind))
                        for name, kind, _ in TABLE_BY_NAME[table].columns])
    rows = 0
    with open_fresh(path, "wb") as handle, pq.ParquetWriter(handle, schema,
                                                           compression="zstd") as writer:
        for batch in batches:
            arrays = [pa.array([parquet_value(table, field.name, row[i], field.type)
                                for row in batch], type=field.type)
                      for i, field in enumerate(schema)]
            writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
            rows += len(batch)
    return rows
