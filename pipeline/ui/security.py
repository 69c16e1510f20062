"""Who may use the page: only a browser on this machine that was given the URL `persona ui` printed.

The server listens on 127.0.0.1 alone, but any local user or any web page the user visits can still send it
requests. So every request must carry the random token (in the URL once, then in a cookie set from it), name
this launch's own host (a DNS-rebinding page names its own), and every change is a POST with a CSRF token from
the page, from this origin.

That host is a name made for this launch, ``<random>.localhost``, which browsers resolve to loopback
themselves (RFC 6761), never ``127.0.0.1`` or ``localhost``: a browser sends a host's cookies to every port
of it, so a cookie of ``127.0.0.1`` would reach any other server on this machine the user's browser visits.
The cookie is host-only (no ``Domain``), for that one name, which no other server knows.

Every answer says: keep nothing (a forgotten fact must not stay in a cache) and load nothing from anywhere else.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

HOST_SUFFIX = ".localhost"  # every name under it is loopback to a browser, and to no resolver outside it
TOKEN_PARAM = "token"
CSRF_FIELD = "csrf"
HEADERS = {
    "Cache-Control": "no-store",
    "Pragma": "no-cache",
    # Every asset ships in the package: no script, style, image or frame from anywhere else, inline or not.
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not no-referrer: under it a browser sends "Origin: null" with the page's own POSTs, which then look foreign.
    "Referrer-Policy": "same-origin",
}


@dataclass(frozen=True, slots=True)
class Keys:
    """The secrets of one run of the server: new each start, never written anywhere."""

    port: int
    token: str
    csrf: str
    name: str  # this launch's host name, <random>.localhost

    @classmethod
    def new(cls, port: int) -> Keys:
        return cls(port, secrets.token_urlsafe(32), secrets.token_urlsafe(32),
                   f"persona-{secrets.token_hex(8)}{HOST_SUFFIX}")

    @property
    def cookie(self) -> str:
        """The cookie's name: cookies are shared by every port of a host, so each server has its own."""
        return f"persona_ui_{self.port}"

    @property
    def authority(self) -> str:
        """The page's host and port, as a browser names them in Host and Origin."""
        return f"{self.name}:{self.port}"

    @property
    def url(self) -> str:
        """What the user opens: the page with the token, which the first answer moves into a cookie."""
        return f"http://{self.authority}/?{urlencode({TOKEN_PARAM: self.token})}"

    def is_token(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def is_csrf(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())

    def host_allowed(self, host: str | None) -> bool:
        """Whether the Host header names this launch's page (a rebound DNS name, another loopback name or the
        bare address do not)."""
        return host is not None and host.lower() == self.authority

    def origin_allowed(self, origin: str | None, fetch_site: str | None) -> bool:
        """Whether a POST comes from this page: a browser names its origin (and whether it is cross-site)."""
        if fetch_site not in (None, "same-origin", "none"):
            return False
        return origin is None or origin == f"http://{self.authority}"
