"""Which proxy a judge URL goes through: $HTTPS_PROXY / $HTTP_PROXY (or $ALL_PROXY) unless
$NO_PROXY names the host, a parent domain, an IP network (`10.0.0.0/8`) or `*`."""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit


def _env(name: str) -> str | None:
    # Lower case first, as curl does; empty means unset.
    return os.environ.get(name.lower()) or os.environ.get(name.upper()) or None


def proxy_for(url: str) -> str | None:
    """The proxy URL for `url` from the environment, or None to connect directly."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if bypassed(host, parts.port, _env("no_proxy") or ""):
        return None
    scheme_proxy = _env("https_proxy") if parts.scheme == "https" else _env("http_proxy")
    proxy = scheme_proxy or _env("all_proxy")
    if proxy and "://" not in proxy:
        proxy = "http://" + proxy
    return proxy


def bypassed(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether NO_PROXY's comma-separated entries cover this host (and port, if given)."""
    for raw in no_proxy.replace(" ", "").split(","):
        entry = raw.lower()
        if not entry:
            continue
        if entry == "*":
            return True
        entry_host, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        if _matches(host, entry_host):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [::1]:8080
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        if port.isdigit():
            return host, int(port)
    return entry, None


def _matches(host: str, entry: str) -> bool:
    host = host.strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        try:
            return address in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    domain = entry.lstrip("*").lstrip(".")
    return host == domain or host.endswith("." + domain)
