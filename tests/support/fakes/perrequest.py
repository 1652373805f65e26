"""The values GitHub draws anew for every answer of a trending page, drawn anew here too.

A real logged-out trending page carries a request id, a fetch nonce, an HTML-safe nonce, the
visitor payload (base64 JSON naming the request id) and its HMAC, and on the repository pages
four masked CSRF tokens (64 random bytes each). :func:`fresh_values` gives a recorded page new
ones in the same form (hex stays hex of its case, base64 stays base64 of its alphabet and
length, the payload stays JSON naming the new request id), so an archive meets what GitHub
serves: no two answers alike, each differing in those values only. Everything else (asset
hashes, the release, pjax versions, click HMACs) changes only when GitHub deploys, and stays.
"""

from __future__ import annotations

import base64
import json
import random
import re

_META_RE = re.compile(rb'(name="(fetch-nonce|request-id|html-safe-nonce|visitor-payload|'
                      rb'visitor-hmac)" content=")([^"]+)(")')
_CSRF_RE = re.compile(rb'((?:data-[\w-]*csrf[\w-]*|name="authenticity_token" value|'
                      rb'data-csrf="true" value)=")([^"]{16,})(")')
_HEX = frozenset(b"0123456789abcdefABCDEF")


def _hex_like(value: bytes, rng: random.Random) -> bytes:
    """Every hex digit drawn again in the value's case; separators (``:``, ``-``) kept."""
    digits = b"0123456789ABCDEF" if re.search(rb"[A-F]", value) else b"0123456789abcdef"
    return bytes(rng.choice(digits) if c in _HEX else c for c in value)


def _base64_like(value: bytes, rng: random.Random) -> bytes:
    urlsafe = b"-" in value or b"_" in value
    padding = len(value) - len(value.rstrip(b"="))
    raw = base64.b64decode(value + b"=" * (-len(value) % 4), altchars=b"-_" if urlsafe else None)
    drawn = rng.randbytes(len(raw))
    encoded = base64.urlsafe_b64encode(drawn) if urlsafe else base64.b64encode(drawn)
    return encoded.rstrip(b"=") + b"=" * padding


def fresh_values(body: bytes, rng: random.Random) -> bytes:
    """``body`` with every per-request value drawn again (the rest byte for byte)."""
    request_id = b""

    def meta(found: re.Match[bytes]) -> bytes:
        nonlocal request_id
        name, value = found.group(2), found.group(3)
        if name == b"visitor-payload":
            payload = json.loads(base64.b64decode(value))
            payload["request_id"] = request_id.decode() or payload.get("request_id")
            payload["visitor_id"] = str(rng.randrange(10 ** 18, 10 ** 19))
            value = base64.b64encode(json.dumps(payload, separators=(",", ":")).encode())
        elif name == b"fetch-nonce":
            value = value[:3] + _hex_like(value[3:], rng)  # "v2:" and a UUID
        else:
            value = _hex_like(value, rng)
            if name == b"request-id":
                request_id = value
        return found.group(1) + value + found.group(4)

    body = _META_RE.sub(meta, body)
    return _CSRF_RE.sub(lambda m: m.group(1) + _base64_like(m.group(2), rng) + m.group(3), body)


def drawn_bytes(body: bytes) -> int:
    """How many random bytes :func:`fresh_values` draws for ``body``: the least any archive
    must store per fetch to give each answer back (hex digits are half a byte, base64
    characters three quarters; the payload's visitor id about 8 bytes)."""
    total = 0
    for found in _META_RE.finditer(body):
        name, value = found.group(2), found.group(3)
        if name == b"visitor-payload":
            total += 8
        else:
            total += sum(1 for c in (value[3:] if name == b"fetch-nonce" else value)
                         if c in _HEX) // 2
    for found in _CSRF_RE.finditer(body):
        total += len(found.group(2).rstrip(b"=")) * 3 // 4
    return total
