"""Queued requests as JSON: what is in Redis can be read back, never run.

scrapy-redis's default serializer is pickle, so anyone who can write to the Redis (every
machine of the cluster, anything else on its network if it is exposed) could make every worker
run code of their choosing by pushing a ``__reduce__`` payload into ``…:requests``. This module
is the ``SCHEDULER_SERIALIZER`` the distributed mode sets (``loads``/``dumps`` over Scrapy's
``Request.to_dict``/``request_from_dict``):

* callbacks and errbacks are spider method names (what ``to_dict`` writes), public ones only;
* ``headers`` and ``body`` are bytes in Scrapy: written as latin-1 text, which maps each byte to
  one character and back;
* ``meta`` and ``cb_kwargs`` must be JSON already: str keys; str, int, float, bool, None, lists
  (a tuple comes back as a list) and such dicts as values. Anything else makes ``dumps`` raise
  :class:`Refused` naming the key, and the scheduler drops that request with one ERROR line;
* a Request subclass only from :data:`REQUEST_CLASSES` (``request_from_dict`` imports whatever
  ``_class`` names);
* ``Authorization`` and ``Proxy-Authorization`` are never written nor read back: credentials
  are added at send time (``scraper.downloadermiddlewares.githubauth``), so a queued request
  has none, and one that has is a bug or a forgery.

``loads`` accepts only what ``dumps`` writes; anything else raises :class:`Refused`.
"""

from __future__ import annotations

import json
import re
from typing import Any

FORMAT = 1
"""Written as ``"v"`` in every entry; an entry of another format is refused."""

REQUEST_CLASSES = frozenset({
    "scrapy.http.request.form.FormRequest",
    "scrapy.http.request.json_request.JsonRequest",
    "scrapy.http.request.rpc.XmlRpcRequest",
})
FIELDS = frozenset({"v", "_class", "url", "headers", "body", "cookies", "meta", "encoding",
                    "flags", "cb_kwargs", "callback", "dont_filter", "errback", "method",
                    "priority", "dumps_kwargs"})
"""``Request.attributes`` (``JsonRequest``'s ``dumps_kwargs`` included), ``_class`` and ``v``."""
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization"})
METHOD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


class Refused(ValueError):
    """Not a request this serializer writes; says which field, never the value."""


def dumps(request: dict[str, Any]) -> bytes:
    """A ``Request.to_dict`` as this module's JSON entry."""
    entry = dict(request)
    entry["headers"] = {
        _text(name): [_text(v) for v in values]
        for name, values in (request.get("headers") or {}).items()
        if _text(name).lower() not in CREDENTIAL_HEADERS}
    entry["body"] = _text(request.get("body") or b"")
    entry["v"] = FORMAT
    _check(entry)
    try:
        return json.dumps(entry, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except ValueError as exc:  # NaN or infinity somewhere
        raise Refused(str(exc)) from None


def loads(data: bytes | str) -> dict[str, Any]:
    """An entry back into a dict for ``request_from_dict``; :class:`Refused` for anything
    that is not one."""
    try:
        entry = json.loads(data)
    except (ValueError, TypeError, RecursionError) as exc:  # pickle, garbage, bad UTF-8
        raise Refused(f"not JSON ({type(exc).__name__})") from None
    if not isinstance(entry, dict):
        raise Refused("not a JSON object")
    try:
        _check(entry)
    except RecursionError:
        raise Refused("nested too deeply") from None
    entry.pop("v")
    entry["headers"] = {name: [v.encode("latin-1") for v in values]
                        for name, values in entry["headers"].items()
                        if name.lower() not in CREDENTIAL_HEADERS}
    entry["body"] = entry["body"].encode("latin-1")
    return entry


def _text(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _check(entry: dict[str, Any]) -> None:
    """Every field of an entry has the type ``dumps`` writes; raises :class:`Refused`."""
    if entry.get("v") != FORMAT:
        raise Refused(f"not format {FORMAT} ('v')")
    unknown = sorted(set(entry) - FIELDS)
    if unknown:
        raise Refused(f"unknown fields {unknown}")
    if "_class" in entry and entry["_class"] not in REQUEST_CLASSES:
        raise Refused("'_class' is not one of Scrapy's request classes")
    for field, kind in (("url", str), ("method", str), ("body", str), ("encoding", str),
                        ("dont_filter", bool)):
        if not isinstance(entry.get(field), kind):
            raise Refused(f"{field!r} is not a {kind.__name__}")
    if not isinstance(entry.get("priority"), int) or isinstance(entry["priority"], bool):
        raise Refused("'priority' is not an int")
    for field in ("callback", "errback"):
        name = entry.get(field)
        if name is not None and not (isinstance(name, str) and METHOD_NAME.fullmatch(name)):
            raise Refused(f"{field!r} is not the name of a public spider method")
    headers = entry.get("headers")
    if not isinstance(headers, dict) or not all(
            isinstance(values, list) and all(isinstance(v, str) for v in values)
            for values in headers.values()):
        raise Refused("'headers' is not a mapping of names to lists of strings")
    flags = entry.get("flags")
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise Refused("'flags' is not a list of strings")
    cookies = entry.get("cookies")
    if not isinstance(cookies, dict | list):
        raise Refused("'cookies' is not a dict or list")
    _plain(cookies, "cookies")
    for field in ("meta", "cb_kwargs", "dumps_kwargs"):
        if field == "dumps_kwargs" and field not in entry:
            continue
        if not isinstance(entry.get(field), dict):
            raise Refused(f"{field!r} is not a dict")
        _plain(entry[field], field)


def _plain(value: Any, where: str) -> None:
    """JSON values only (a tuple passes as the list it becomes)."""
    if value is None or isinstance(value, str | int | float | bool):
        return
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _plain(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise Refused(f"{where} has a {type(key).__name__} key; only str keys are JSON")
            _plain(item, f"{where}[{key!r}]")
        return
    raise Refused(f"{where} is not a JSON value ({type(value).__name__})")
