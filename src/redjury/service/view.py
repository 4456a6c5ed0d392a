"""`redjury view`: one run's HTML report, or two runs' comparison, served on localhost.

The page is rendered once, in memory, from the report JSONL; the server answers GET and HEAD
for it at `/` and nothing else: no file is read per request, so no request path can reach
another file (a `..` in a path is a 404 like any other unknown path), and nothing is written.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

LOOPBACK = "127.0.0.1"
PAGE_PATHS = ("/", "/index.html")


def run_page(run: Path) -> str:
    """One run's HTML report (as `redjury report` writes it), rendered in memory."""
    from redjury.report.digest import load_report, report_path_of
    from redjury.report.html import render_html
    from redjury.report.row_check import read_as_written

    with read_as_written(report_path_of(run)):
        return render_html(load_report(run))


def comparison_page(base: Path, new: Path, *, allow_different_judges: bool = False) -> str:
    """`redjury compare BASE NEW --html`'s page, rendered in memory."""
    from redjury.api_compare import compare
    from redjury.report.compare_html import comparison_html

    found = compare(base, new, allow_different_judges=allow_different_judges)
    return comparison_html(found.rows, found.base, found.new)


def view_app(page: str) -> web.Application:
    """An app answering GET (and HEAD) for the page alone; every other path is a 404 and
    every other method a 405."""
    body = page.encode("utf-8")
    headers = {
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }

    async def show(_request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/html", charset="utf-8", headers=headers)

    app = web.Application()
    for path in PAGE_PATHS:
        app.router.add_get(path, show)
    return app


def listening_socket(port: int) -> socket.socket:
    """A socket bound on loopback: `port`, or a free one when it is 0."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
    except OSError:
        sock.close()
        raise
    return sock


def has_display() -> bool:
    """Whether a browser could open a window here (as `inspect view` decides): macOS and
    Windows always; elsewhere an X or Wayland display."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def serve_page(page: str, port: int, announce: Callable[[str], None], open_browser: bool) -> None:
    """Serve `page` on 127.0.0.1 until SIGINT or SIGTERM; say its URL once listening and,
    with `open_browser`, open it in the default browser (in a thread: a console browser
    must not hold up the server)."""
    sock = listening_socket(port)
    url = f"http://{LOOPBACK}:{sock.getsockname()[1]}/"

    def started(_banner: str) -> None:
        announce(f"serving on {url} (Ctrl-C stops)")
        if open_browser:
            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

    web.run_app(view_app(page), sock=sock, print=started, access_log=None, shutdown_timeout=1.0)
