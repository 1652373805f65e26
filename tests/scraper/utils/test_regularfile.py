"""A file someone else controls is read only when it is a regular file, and only up to a cap."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scraper.utils.regularfile import NotARegularFile, read_regular_file


def test_a_regular_file_and_a_symlink_to_one_are_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"x" * 100)
    (tmp_path / "link.yaml").symlink_to(path)
    assert read_regular_file(path, 100) == b"x" * 100
    assert read_regular_file(tmp_path / "link.yaml", 100) == b"x" * 100


def test_past_the_cap_is_refused_after_reading_one_byte_more(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"x" * 101)
    with pytest.raises(NotARegularFile, match="larger than 100 bytes"):
        read_regular_file(path, 100)


@pytest.mark.timeout(10)  # a FIFO opened for reading the usual way waits for a writer forever
def test_a_fifo_a_device_and_a_directory_are_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    reasons = {}
    for path in (fifo, zero, tmp_path):
        with pytest.raises(NotARegularFile) as caught:
            read_regular_file(path, 1 << 20)
        reasons[path.name] = caught.value.reason
    assert reasons == {"fifo": "is a FIFO (named pipe), not a regular file",
                       "zero": "is a character device, not a regular file",
                       tmp_path.name: "is a directory, not a regular file"}


def test_a_missing_file_is_the_usual_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular_file(tmp_path / "none", 10)
