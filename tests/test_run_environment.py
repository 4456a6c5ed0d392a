"""A failing environment is one line naming the path, exit 2: a broken judge cache, a full
disk, a file-size limit, a file where a folder should be."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from redjury_testing import REPO, redjury, rows_of

from redjury.config import parse_config
from redjury.engines import run
from redjury.errors import RunError
from redjury.pipeline import RunOptions
from redjury.report.jsonl import JsonlWriter

EXAMPLE = REPO / "examples" / "attempts.jsonl"


def _judged_config(tmp_path: Path) -> Path:
    """A judge nobody answers: the cache is opened (and refused) before any call."""
    config = {
        "evaluation": {
            "judges": [
                {
                    "name": "j",
                    "connection": {"base_url": "http://127.0.0.1:9/v1"},
                    "generation": {"seed": 1},
                }
            ]
        }
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config))
    return path


def _run_with_cache_dir(tmp_path: Path, cache_dir: Path):
    out = tmp_path / "out"
    result = redjury(
        "run", EXAMPLE, "-c", _judged_config(tmp_path), "--out", out, "--no-preflight",
        env={"REDJURY_CACHE_DIR": str(cache_dir)},
    )  # fmt: skip
    return result, out


def test_a_cache_of_random_bytes_is_named_with_how_to_clear_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "judges.sqlite"
    cache.parent.mkdir()
    cache.write_bytes(os.urandom(8192))
    result, out = _run_with_cache_dir(tmp_path, cache.parent)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"redjury: error: judge cache {cache}: not a judge cache")
    assert f"rm '{cache}'*" in result.stderr and "--no-cache" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not out.exists()  # refused before the run folder was made


def test_a_cache_path_that_is_a_folder_or_under_a_file_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    (folder / "judges.sqlite").mkdir(parents=True)
    result, _ = _run_with_cache_dir(tmp_path, folder)
    assert result.returncode == 2, result.stderr
    assert f"judge cache {folder / 'judges.sqlite'}: is a folder" in result.stderr
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    result, _ = _run_with_cache_dir(tmp_path, a_file)
    assert result.returncode == 2, result.stderr
    assert f"{a_file} is a file, not a folder" in result.stderr
    assert "internal error" not in result.stderr


def test_a_file_where_the_run_folder_goes_is_named(tmp_path: Path) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("x")
    result = redjury("run", EXAMPLE, "--out", a_file / "out")
    assert result.returncode == 2, result.stderr
    assert (
        result.stderr == f"redjury: error: {a_file / 'out'}: Not a directory; nothing was judged\n"
    )


def _file_size_limit(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_file_size_limit_names_the_folder_and_what_was_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "redjury.cli", "run", str(EXAMPLE), "--out", str(out)],
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_file_size_limit(16_384),
    )
    assert result.returncode == 2, result.stderr
    report = out / "redjury.report.jsonl"
    assert result.stderr.startswith(f"redjury: error: {out}: File too large; {report} keeps")
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert report.stat().st_size <= 16_384


def test_a_full_disk_mid_run_is_an_error_naming_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_flush = JsonlWriter.flush
    calls = {"n": 0}

    def flush_until_full(self: JsonlWriter) -> None:
        calls["n"] += 1
        if calls["n"] > 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_flush(self)

    monkeypatch.setattr(JsonlWriter, "flush", flush_until_full)
    out = tmp_path / "out"
    rows = [{"id": f"x{i}", "outputs": ["hello"]} for i in range(2000)]
    src = tmp_path / "a.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    options = RunOptions([src], parse_config({}, "test"), out, progress=False, workers=1)
    with pytest.raises(RunError) as raised:
        run(options)
    message = str(raised.value)
    assert raised.value.exit_code == 2
    assert message.startswith(f"{out}: No space left on device; {out / 'redjury.report.jsonl'}")
    assert "the same command resumes" in message
    monkeypatch.setattr(JsonlWriter, "flush", real_flush)
    kept = rows_of(out / "redjury.report.jsonl", "attempt")
    assert [r["id"] for r in kept] == [f"x{i}" for i in range(len(kept))]
