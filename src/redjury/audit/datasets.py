"""Labelled calibration data for the audit: HarmBench's human-labelled validation set (pinned,
checksummed, cached) and the user's own CSV/JSONL files; seeded stratified sampling."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir

from redjury.downloads import DownloadError, check_sha256, download_pinned
from redjury.judges.config import DEFAULT_HARMBENCH_REVISION, CalibrationSpec

HARMBENCH_BASE_URL = "https://raw.githubusercontent.com/centerforaisafety/HarmBench"
VALIDATION_PATH = "data/classifier_val_sets/text_behaviors_val_set.json"
BEHAVIOURS_PATH = "data/behavior_datasets/harmbench_behaviors_text_all.csv"
HARMBENCH_PATHS = (VALIDATION_PATH, BEHAVIOURS_PATH)

#: SHA-256 of the files at the default revision, as HarmBench publishes them.
HARMBENCH_SHA256: Mapping[str, Mapping[str, str]] = {
    DEFAULT_HARMBENCH_REVISION: {
        "text_behaviors_val_set.json": (
            "e740727b6874e492063e097122a9916833d57f9bd2ce3e86713ec188741a41c8"
        ),
        "harmbench_behaviors_text_all.csv": (
            "8d81accedd38eaaf8b760618622bb888417d1fd0c86eba65c427a16f1cbb4afc"
        ),
    }
}

#: Verdicts HarmBench stores beside each generation, and how each is read as 0/1.
STORED_JUDGES = (
    "cls",
    "cls_mistral",
    "gpt-4-0613",
    "gpt-4-1106-preview",
    "mixtral",
    "PAIR_gpt-4-0613",
    "GPTFuzz",
    "advbench",
    "gpt-3.5-turbo-0613",
    "llama_guard",
    "chatglm",
)


class DatasetError(DownloadError):
    """Calibration data that cannot be loaded; the message says what to do about it."""


@dataclass(frozen=True, slots=True)
class LabelledSample:
    """One exchange people have judged: `label` True means the attack succeeded."""

    id: str
    goal: str
    response: str
    label: bool
    goal_context: str | None = None
    # Verdicts of judges the source file already holds (HarmBench's cls, llama_guard, …).
    stored: Mapping[str, bool | None] = field(default_factory=dict)


@dataclass(frozen=True)
class CalibrationSet:
    """The drawn sample plus what the loader saw on the way."""

    samples: list[LabelledSample]
    source: str
    records: int  # records in the source
    joined: int  # records usable (joined to a behaviour, or valid lines)
    missing_ids: list[str] = field(default_factory=list)  # behaviour ids with no behaviour row
    revision: str | None = None

    @property
    def positives(self) -> int:
        return sum(s.label for s in self.samples)

    @property
    def contextual(self) -> int:
        return sum(bool(s.goal_context) for s in self.samples)

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "revision": self.revision,
            "records": self.records,
            "joined": self.joined,
            "skipped": self.records - self.joined,
            "missing_behaviour_ids": self.missing_ids,
            "samples": len(self.samples),
            "positive": self.positives,
            "negative": len(self.samples) - self.positives,
            "contextual": self.contextual,
        }


def default_cache_dir() -> Path:
    """`~/.cache/redjury/calibration` on Linux (the platform's user cache dir elsewhere)."""
    return Path(user_cache_dir("redjury")) / "calibration"


def cache_dir_of(spec: CalibrationSpec) -> Path:
    return Path(spec.cache_dir).expanduser() if spec.cache_dir else default_cache_dir()


# -- download ------------------------------------------------------------------------------
def _check_sha_as(path: Path, name: str, revision: str, where: str) -> None:
    expected = HARMBENCH_SHA256.get(revision, {}).get(name)
    what = f"{name}: SHA-256 mismatch for HarmBench revision {revision}"
    try:
        check_sha256(path, expected, what, where)
    except DownloadError as exc:
        raise DatasetError(str(exc)) from exc


def _download(url: str, dest: Path, revision: str, timeout: float) -> None:
    download_pinned(
        url, dest, timeout, lambda tmp: _check_sha_as(tmp, dest.name, revision, "downloaded")
    )


def _missing_help(missing: Sequence[tuple[str, Path]], cause: str) -> str:
    lines = [
        f"HarmBench calibration files are not in the cache and cannot be downloaded ({cause})."
    ]
    lines.append("Download them and put them here:")
    for url, path in missing:
        lines.append(f"  {url}\n    -> {path}")
    return "\n".join(lines)


def fetch_harmbench(
    *,
    revision: str = DEFAULT_HARMBENCH_REVISION,
    cache_dir: Path | None = None,
    base_url: str | None = None,
    timeout: float = 30.0,
    offline: bool = False,
) -> dict[str, Path]:
    """The validation JSON and behaviours CSV at `revision`, from the cache or downloaded into
    `cache_dir/<revision>/<file name>`. Returns {upstream path: local path}."""
    if not revision or "/" in revision or revision.startswith("."):
        raise DatasetError(f"invalid HarmBench revision {revision!r}")
    root = (cache_dir or default_cache_dir()) / revision
    base = (base_url or HARMBENCH_BASE_URL).rstrip("/")
    files = {p: root / Path(p).name for p in HARMBENCH_PATHS}
    missing = [
        (f"{base}/{revision}/{p}", local) for p, local in files.items() if not local.is_file()
    ]
    if missing and offline:
        raise DatasetError(_missing_help(missing, "offline"))
    for url, local in missing:
        try:
            _download(url, local, revision, timeout)
        except DownloadError as exc:
            if "SHA-256" in str(exc) or "truncated" in str(exc):
                raise DatasetError(str(exc)) from exc
            raise DatasetError(_missing_help(missing, str(exc))) from exc
    for local in files.values():
        _check_sha_as(
            local, local.name, revision, f"cached at {local}; delete it to download again"
        )
    return files


# -- HarmBench join --------------------------------------------------------------------------
def _stored_verdict(name: str, value: Any) -> bool | None:
    if value is None:
        return None
    if name == "PAIR_gpt-4-0613":
        text = str(value).replace(" ", "")
        return "[[10]]" in text
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("yes", "1", "true"):
        return True
    if text in ("no", "0", "false"):
        return False
    return None


def read_harmbench(
    validation: Path, behaviours: Path, *, revision: str | None = None
) -> CalibrationSet:
    """Join validation records to behaviours on the behaviour id; label = human majority."""
    try:
        data = json.loads(validation.read_text(encoding="utf-8"))
        with behaviours.open(encoding="utf-8", newline="") as fh:
            rows = {row["BehaviorID"]: row for row in csv.DictReader(fh)}
    except (ValueError, KeyError, OSError) as exc:
        raise DatasetError(f"cannot read HarmBench files: {exc}") from exc
    if not isinstance(data, dict):
        raise DatasetError(f"{validation}: expected a JSON object keyed by behaviour id")
    samples: list[LabelledSample] = []
    records = 0
    missing: list[str] = []
    for behaviour_id, items in data.items():
        behaviour = rows.get(behaviour_id)
        records += len(items)
        if behaviour is None:
            missing.append(behaviour_id)
            continue
        context = (behaviour.get("ContextString") or "").strip() or None
        for i, item in enumerate(items):
            votes = sum(int(item.get(f"human_{k}") or 0) for k in range(3))
            samples.append(
                LabelledSample(
                    id=f"{behaviour_id}:{i}",
                    goal=behaviour["Behavior"],
                    response=str(item.get("generation") or ""),
                    label=votes >= 2,
                    goal_context=context,
                    stored={n: _stored_verdict(n, item.get(n)) for n in STORED_JUDGES},
                )
            )
    return CalibrationSet(
        samples=samples,
        source="harmbench",
        records=records,
        joined=len(samples),
        missing_ids=missing,
        revision=revision,
    )


def load_harmbench(
    *,
    revision: str = DEFAULT_HARMBENCH_REVISION,
    cache_dir: Path | None = None,
    base_url: str | None = None,
    timeout: float = 30.0,
    offline: bool = False,
) -> CalibrationSet:
    """Every joined HarmBench record (596 at the default revision), not sampled."""
    files = fetch_harmbench(
        revision=revision, cache_dir=cache_dir, base_url=base_url, timeout=timeout, offline=offline
    )
    return read_harmbench(files[VALIDATION_PATH], files[BEHAVIOURS_PATH], revision=revision)


# -- the user's own labelled file ------------------------------------------------------------
_TRUE = {"1", "true", "yes"}
_FALSE = {"0", "false", "no"}


def _label(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"label must be 0 or 1, got {value!r}")


def _file_rows(path: Path) -> Iterable[tuple[int, Any]]:
    """(line number, record) pairs; a JSON syntax error becomes a record that says so."""
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        for row in reader:
            yield reader.line_num, row
        return
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except ValueError as exc:
            yield n, ValueError(f"not JSON: {exc}")


def load_labelled_file(path: Path | str) -> CalibrationSet:
    """A CSV (header row) or JSONL file of goal, response, label (0/1), optional goal_context
    and id. Every bad line is reported, with its number, in one error."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such labelled dataset file")
    samples: list[LabelledSample] = []
    errors: list[str] = []
    records = 0
    seen: set[str] = set()
    for line, row in _file_rows(path):
        records += 1
        if isinstance(row, Exception):
            errors.append(f"{path}:{line}: {row}")
            continue
        if not isinstance(row, dict):
            errors.append(f"{path}:{line}: expected an object with goal, response and label")
            continue
        problems = [
            f"missing {key}" for key in ("goal", "response", "label") if row.get(key) in (None, "")
        ]
        label = False
        if not problems:
            try:
                label = _label(row["label"])
            except ValueError as exc:
                problems.append(str(exc))
        sample_id = str(row.get("id") or f"line-{line}")
        if sample_id in seen:
            problems.append(f"duplicate id {sample_id!r}")
        if problems:
            errors.append(f"{path}:{line}: {'; '.join(problems)}")
            continue
        seen.add(sample_id)
        context = row.get("goal_context")
        samples.append(
            LabelledSample(
                id=sample_id,
                goal=str(row["goal"]),
                response=str(row["response"]),
                label=label,
                goal_context=str(context).strip() or None if context else None,
            )
        )
    if errors:
        shown = errors[:20] + ([f"… and {len(errors) - 20} more"] if len(errors) > 20 else [])
        raise DatasetError(f"{path}: {len(errors)} bad line(s):\n" + "\n".join(shown))
    if not samples:
        raise DatasetError(f"{path}: no labelled samples")
    return CalibrationSet(samples=samples, source=str(path), records=records, joined=len(samples))


# -- sampling --------------------------------------------------------------------------------
def stratified_sample(
    samples: Sequence[LabelledSample], size: int | None, seed: int
) -> list[LabelledSample]:
    """`size` samples, each label drawn in proportion (at least one of each when there is
    room), with a seeded `random.Random`, so the same seed draws the same sample everywhere.

    The draw order (shuffle positives, shuffle negatives, take, shuffle the union) is the one
    HackAgent uses, so seed 42 draws the same 100 HarmBench records it does.
    """
    if size is None or size >= len(samples):
        return list(samples)
    if size < 1:
        raise ValueError("sample size must be at least 1")
    rng = random.Random(seed)
    positive = [s for s in samples if s.label]
    negative = [s for s in samples if not s.label]
    rng.shuffle(positive)
    rng.shuffle(negative)
    n_pos = round(size * len(positive) / len(samples))
    if size >= 2 and positive and negative:
        n_pos = min(size - 1, max(1, n_pos))
    n_pos = min(n_pos, len(positive))
    n_pos = max(n_pos, size - len(negative))
    drawn = positive[:n_pos] + negative[: size - n_pos]
    rng.shuffle(drawn)
    return drawn


def sample_ids_digest(samples: Iterable[LabelledSample]) -> str:
    """SHA-256 of the sorted sample ids, one per line: pins a draw in tests and reports."""
    return hashlib.sha256("\n".join(sorted(s.id for s in samples)).encode()).hexdigest()


def load_calibration(spec: CalibrationSpec, *, offline: bool = False) -> CalibrationSet:
    """Load `spec`'s dataset and draw its seeded stratified sample."""
    if spec.dataset == "file":
        if not spec.path:
            raise DatasetError("evaluation.audit.dataset.path is required for dataset: file")
        full = load_labelled_file(spec.path)
    else:
        full = load_harmbench(
            revision=spec.revision,
            cache_dir=cache_dir_of(spec),
            base_url=spec.base_url,
            timeout=spec.download_timeout,
            offline=offline,
        )
    drawn = stratified_sample(full.samples, spec.sample_size, spec.seed)
    return CalibrationSet(
        samples=drawn,
        source=full.source,
        records=full.records,
        joined=full.joined,
        missing_ids=full.missing_ids,
        revision=full.revision,
    )
