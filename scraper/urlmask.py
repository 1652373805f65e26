"""URLs with their password hidden, for anything shown or stored (logs, status, command lines)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

MASK = "***"


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***``: ``redis://:***@host:6379/0``."""
    try:
        parts = urlsplit(url)
        password = parts.password
        port = parts.port
    except ValueError:
        return f"{url.partition(':')[0]}://?"  # unparsable: show nothing that may be a secret
    if password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if port:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, f"{user}:{MASK}@{host}", parts.path, parts.query, ""))


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
        return urlsplit(url).password == MASK
    except ValueError:
        return False
