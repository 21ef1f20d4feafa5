"""Network names and secrets: whether a host is this machine (the judging server's and the model
judge's rule), credentials in a URL and their redaction for messages, a key masked in text."""

from __future__ import annotations

import ipaddress
import re
import urllib.parse


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine: ``localhost`` or a loopback address (127.0.0.0/8, ::1).

    >>> is_loopback("localhost"), is_loopback("127.0.0.9"), is_loopback("::1"), is_loopback("example.com")
    (True, True, True, False)
    """
    host = host.lower().strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------- URLs and secrets
#: Query parameters of a URL that carry a secret (``?api_key=…``, ``?token=…``, ``?sig=…``).
_SECRET_PARAM = re.compile(r"key|token|secret|passw|pwd|auth|sig|credential|session|code", re.IGNORECASE)


def is_loopback_url(url: str) -> bool:
    """Whether ``url``'s host is this machine: ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    return is_loopback(urllib.parse.urlsplit(url).hostname or "")


def secret_params(url: str) -> list[str]:
    """Names of the query parameters of ``url`` that look like credentials."""
    query = urllib.parse.urlsplit(url).query
    return [k for k, _ in urllib.parse.parse_qsl(query, keep_blank_values=True) if _SECRET_PARAM.search(k)]


def redact_url(url: str) -> str:
    """``url`` with any user and password, and the value of any query parameter that looks like a
    credential, replaced by ``***`` (for messages)."""
    parts = urllib.parse.urlsplit(url)
    if "@" in parts.netloc:
        parts = parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1])
    if parts.query:
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        parts = parts._replace(query="&".join(f"{k}={'***' if _SECRET_PARAM.search(k) else v}" for k, v in query))
    return urllib.parse.urlunsplit(parts)


def mask(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` (a key) replaced by ``***``; as it is without one.

    >>> mask("bad key sk-123", "sk-123"), mask("no key", None)
    ('bad key ***', 'no key')
    """
    return text.replace(secret, "***") if secret else text
