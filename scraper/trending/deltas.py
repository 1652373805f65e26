"""A page as a zstd frame against an earlier page: the archive's form for every new fetch.

Two fetches of one trending list differ in a few hundred bytes (the values GitHub draws per
request, a few changed counts), so a page is compressed with the list's previous page as a
raw-content dictionary: the frame holds only what differs. Level 3: a higher level gains little
on such frames and costs tens of milliseconds a page (``benchmarks/archive.py``).

Reading is bounded: a frame is decompressed as a stream into at most ``limit`` bytes, with a
window no larger than that, so a damaged or hostile frame (a bomb declaring gigabytes) costs at
most ``limit`` bytes of memory and says why it was refused.
"""

from __future__ import annotations

import io

import zstandard

LEVEL = 3
_CHUNK = 1 << 16


class FrameError(ValueError):
    """A frame that cannot be given back: the message says why, in a few words."""


def _dictionary(base: bytes) -> zstandard.ZstdCompressionDict:
    return zstandard.ZstdCompressionDict(base, dict_type=zstandard.DICT_TYPE_RAWCONTENT)


def compress(body: bytes, base: bytes | None) -> bytes:
    """``body`` as one frame; against ``base`` when given (None: a frame that stands alone)."""
    # No checksum: the archive checks every body given back against its sha256.
    compressor = zstandard.ZstdCompressor(
        level=LEVEL, dict_data=None if base is None else _dictionary(base),
        write_checksum=False, write_content_size=True, write_dict_id=False)
    return compressor.compress(body)


def decompress(frame: bytes, base: bytes | None, limit: int) -> bytes:
    """The body of ``frame``; FrameError if it does not decompress or holds more than
    ``limit`` bytes."""
    out = io.BytesIO()
    try:
        decompressor = zstandard.ZstdDecompressor(
            dict_data=None if base is None else _dictionary(base),
            max_window_size=max(1 << 20, 1 << max(limit - 1, 1).bit_length()))
        with decompressor.stream_reader(io.BytesIO(frame)) as reader:
            while chunk := reader.read(_CHUNK):
                if out.tell() + len(chunk) > limit:
                    raise FrameError(f"decompresses past {limit:,} bytes")
                out.write(chunk)
    except zstandard.ZstdError as exc:
        raise FrameError(f"does not decompress ({exc})") from None
    return out.getvalue()
