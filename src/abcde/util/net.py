"""Network names: whether a host is this machine (the judging server's and the model judge's rule)."""

from __future__ import annotations

import ipaddress


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
