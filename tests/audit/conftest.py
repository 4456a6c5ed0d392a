"""Fixtures for the audit tests: a pre-filled HarmBench cache and a local raw-file server."""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from redjury.judges.config import DEFAULT_HARMBENCH_REVISION

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "servers"))

from fault_server import FaultServer  # noqa: E402

# Not imported from tests/conftest.py: every conftest here is a module named `conftest`.
HARMBENCH_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "harmbench"
FILE_NAMES = ("text_behaviors_val_set.json", "harmbench_behaviors_text_all.csv")


@pytest.fixture
def harmbench_cache(tmp_path: Path) -> Path:
    """A calibration cache dir holding the pinned files, as a download would leave it."""
    cache = tmp_path / "calibration"
    root = cache / DEFAULT_HARMBENCH_REVISION
    root.mkdir(parents=True)
    for name in FILE_NAMES:
        shutil.copyfile(HARMBENCH_DATA / name, root / name)
    return cache


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


@pytest.fixture
def raw_server() -> Iterator[RawFileServer]:
    """Serves the pinned HarmBench files at /<revision>/<upstream path>."""
    from redjury.audit.datasets import BEHAVIOURS_PATH, VALIDATION_PATH

    files = {
        f"/{DEFAULT_HARMBENCH_REVISION}/{VALIDATION_PATH}": (
            HARMBENCH_DATA / FILE_NAMES[0]
        ).read_bytes(),
        f"/{DEFAULT_HARMBENCH_REVISION}/{BEHAVIOURS_PATH}": (
            HARMBENCH_DATA / FILE_NAMES[1]
        ).read_bytes(),
    }
    server = RawFileServer(files).start()
    yield server
    server.stop()


@pytest.fixture
def harmbench_data() -> Path:
    return HARMBENCH_DATA


@pytest.fixture
def judge_server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv
