"""A local raw-file server (like raw.githubusercontent.com) for download tests: 127.0.0.1, port 0."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class RawFileServer:
    """Serves `files` (URL path → bytes) on 127.0.0.1; paths in `truncate` get half their
    body under a Content-Length for all of it, then the connection closes."""

    files: dict[str, bytes] = field(default_factory=dict)
    truncate: set[str] = field(default_factory=set)
    hits: list[str] = field(default_factory=list)

    def start(self) -> RawFileServer:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (stdlib name)
                outer.hits.append(self.path)
                body = outer.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path in outer.truncate:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                """No access log on the test output."""

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
