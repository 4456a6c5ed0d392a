"""The files a config names, checked when it loads so that a missing or broken one stops
the run before anything is judged: the calibration JSON, the garak detector metrics, the
JUnit target and a labelled audit dataset. Paths resolve as the run resolves them."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

Loc = tuple[int | str, ...]


# Config keys holding a file or folder path (at any depth: judges, detectors, a guardrail's
# options); a relative one is read against the config file's folder, not the current one.
PATH_KEYS = frozenset(
    {
        "calibration",
        "detector_metrics_file",
        "junit",
        "ca_bundle",
        "prompt_file",
        "cache_dir",
        "cache_path",
        "path",
        "template",
        "rubric",
        "schema_dir",
    }
)
# Values of those keys that are names, not paths.
_NOT_PATHS = frozenset({"upstream"})


def resolve_relative_paths(data: Any, folder: Path) -> Any:
    """A copy of config data whose relative paths (PATH_KEYS) are joined to `folder`; a
    rubric or template given by name (`summarization.v1`, `upstream`) is left alone."""
    if isinstance(data, list):
        return [resolve_relative_paths(v, folder) for v in data]
    if not isinstance(data, dict):
        return data
    out = {}
    for key, value in data.items():
        if key in PATH_KEYS and isinstance(value, str) and _is_relative_path(key, value):
            out[key] = str(folder / value)
        else:
            out[key] = resolve_relative_paths(value, folder)
    return out


def _is_relative_path(key: str, value: str) -> bool:
    if not value or value in _NOT_PATHS or value.startswith("~") or Path(value).is_absolute():
        return False
    # A rubric is a NAME.vN unless it names a file.
    return key != "rubric" or value.endswith(".txt") or "/" in value


def _json_problem(path: str, exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{path!r} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return f"{path!r} is not UTF-8 text"
    if isinstance(exc, OSError):
        return f"cannot read {path!r}: {exc.strerror or type(exc).__name__}"
    return f"{path!r}: {exc}"


#: Larger named files are refused: they are small JSON or CSV, never gigabytes.
MAX_FILE_BYTES = 256 * 2**20


def _regular_file_problem(path: str) -> str | None:
    # A FIFO or a device (/dev/zero, /dev/stdin) would block or never end.
    target = Path(path).expanduser()
    if not target.exists():
        return f"cannot read {path!r}: No such file or directory"
    if not target.is_file():
        return f"{path!r} is not a regular file"
    if target.stat().st_size > MAX_FILE_BYTES:
        return f"{path!r} is larger than {MAX_FILE_BYTES // 2**20} MiB"
    return None


def readable_problem(path: str, load: Callable[[str], Any]) -> str | None:
    try:
        problem = _regular_file_problem(path)
        if problem:
            return problem
        load(path)
    except (OSError, ValueError, RecursionError) as exc:
        return _json_problem(path, exc)
    return None


def load_calibration(path: str) -> Any:
    from redjury.stats.calibration import Calibration

    return Calibration.load(path)


def load_detector_metrics(path: str) -> Any:
    from redjury.stats.detector_metrics import load_garak_detector_metrics

    return load_garak_detector_metrics(path)


def read_first_byte(path: str) -> Any:
    with open(path, "rb") as handle:
        return handle.read(1)


def writable_file_problem(path: str) -> str | None:
    """Why a file could not be written at `path` (its folders created as needed), or None."""
    target = Path(path).expanduser()
    if target.is_dir():
        return f"{path!r} is a folder, not a file"
    for folder in target.parents:
        if folder.exists():
            if not folder.is_dir():
                return f"{path!r} cannot be written: {str(folder)!r} is a file, not a folder"
            if not os.access(folder, os.W_OK | os.X_OK):
                return f"{path!r} cannot be written: no permission to write in {str(folder)!r}"
            return None
    return None
