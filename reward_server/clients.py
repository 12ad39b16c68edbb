"""Who sent a request: the name the queues share their workers by (services/queue/fair.py).

A client is its network address as the server sees it: an IPv4 address, or the /64 an IPv6
address belongs to (one host is commonly given a whole /64, so single addresses would let it
count as billions of clients). The API key cannot tell clients apart (a server has one), and
nothing a client sends can either, or it could name itself anew with each request. So a client
gains nothing by opening more requests or connections; clients behind one address (a NAT, a
reverse proxy that does not pass the address on) share one turn.

Behind a reverse proxy the address is the one uvicorn reports: the proxy's, unless uvicorn
trusts it to say whom it forwards (``FORWARDED_ALLOW_IPS``, default ``127.0.0.1,::1``; the proxy
sets ``X-Forwarded-For``). docs/security.md says how to deploy it.
"""
from __future__ import annotations

import ipaddress

from fastapi import Request


def client_of(http: Request) -> str:
    """The client ``http`` comes from (see the module docstring); ``""`` when the server cannot
    tell (no peer address: every such request shares one turn)."""
    host = http.client.host if http.client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network((address, 64), strict=False))
    return str(address)
