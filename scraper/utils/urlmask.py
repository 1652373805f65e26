"""URLs with their password hidden, for anything shown or stored (logs, status, command lines)."""

from __future__ import annotations

from urllib.parse import unquote_plus, urlsplit, urlunsplit

MASK = "***"


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***``: ``redis://:***@host:6379/0``."""
    try:
        parts = urlsplit(url)
        password = parts.password
        port = parts.port
    except ValueError:
        return f"{url.partition(':')[0]}://?"  # unparsable: show nothing that may be a secret
    query = _mask_query(parts.query)
    if password is None:
        return url if query == parts.query else urlunsplit(parts._replace(query=query))
    user = parts.username or ""
    host = parts.hostname or ""
    if port:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, f"{user}:{MASK}@{host}", parts.path, query, ""))


SECRET_PARAMETERS = frozenset({"password", "username"})
"""Query parameters redis-py reads as credentials (``redis://host/0?password=…``)."""


def _mask_query(query: str) -> str:
    pairs = []
    for pair in query.split("&") if query else []:
        name, sep, _ = pair.partition("=")
        secret = unquote_plus(name).strip().lower() in SECRET_PARAMETERS
        pairs.append(f"{name}={MASK}" if secret and sep else pair)
    return "&".join(pairs)


def mask_argv(argv: list[str]) -> list[str]:
    """A command line with the password of every URL in it masked (``URL`` or ``--opt=URL``)."""
    masked = []
    for arg in argv:
        if "://" in arg:
            option, sep, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
            arg = f"{option}{sep}{mask_url(value)}"
        masked.append(arg)
    return masked


def is_masked(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.password == MASK or any(
            pair.partition("=")[2] == MASK for pair in parts.query.split("&")
            if unquote_plus(pair.partition("=")[0]).strip().lower() in SECRET_PARAMETERS)
    except ValueError:
        return False
