"""The sources' own judge prompts (`scoring.template: upstream`): downloaded at run time from the
source repository at a pinned revision, checked against the pin table and cached; never stored
in redjury's repository.

Every built-in source pins its revision, the SHA-256 of each extracted prompt (UTF-8) and, where
known, the file's SHA-256. Every load (a download, the cache, a copy put there by hand) is
checked before any judge is asked; `scoring.upstream.sha256` replaces the pins with a hash of
the user's own (needed for another revision). The hashes used go into the judge's fingerprint,
the run header and the eval rows.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from platformdirs import user_cache_dir

from redjury.downloads import DownloadError, download_pinned, sha256_of
from redjury.errors import RedjuryError
from redjury.judges.config import UpstreamSpec

RAW_GITHUB = "https://raw.githubusercontent.com"

# A function that pulls one prompt out of a file's text; raises ValueError when absent.
Extract = Callable[[str], str]


class UpstreamError(RedjuryError, ValueError):
    """The source's prompt cannot be had: not cached and not downloadable, or not as pinned."""


def python_value(dotted: str, key: str | None = None) -> Extract:
    """A string constant of a Python file, read with `ast` (never executed): `NAME`,
    `Class.ATTR`, or with `key` an entry of a dict literal."""
    names = dotted.split(".")

    def extract(text: str) -> str:
        body: list[ast.stmt] = ast.parse(text).body
        for i, name in enumerate(names):
            node = _assigned(body, name)
            if node is None:
                raise ValueError(f"no {'.'.join(names[: i + 1])} in the file")
            if i + 1 < len(names):
                if not isinstance(node, ast.ClassDef):
                    raise ValueError(f"{name} is not a class")
                body = node.body
                continue
            value = ast.literal_eval(node)
            if key is not None:
                value = value[key] if isinstance(value, dict) and key in value else None
            if not isinstance(value, str):
                raise ValueError(f"{dotted}{f'[{key!r}]' if key else ''} is not a string")
            return value
        raise AssertionError("unreachable")

    return extract


def _assigned(body: list[ast.stmt], name: str) -> Any:
    """The class named `name`, or the value expression assigned to `name`, in `body`."""
    for stmt in body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            return stmt
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in stmt.targets
        ):
            return stmt.value
        target = getattr(stmt, "target", None)
        if isinstance(stmt, ast.AnnAssign) and isinstance(target, ast.Name) and target.id == name:
            return stmt.value
    return None


def json_value(key: str) -> Extract:
    """A string value of a JSON object file."""

    def extract(text: str) -> str:
        value = json.loads(text).get(key)
        if not isinstance(value, str):
            raise ValueError(f"no string {key!r} in the JSON file")
        return value

    return extract


@dataclass(frozen=True)
class UpstreamSource:
    """One file of a source repository and the prompts inside it, at a pinned revision, with
    the pins: the file's SHA-256 where known, each extracted prompt's always."""

    repo: str
    revision: str
    path: str
    parts: Mapping[str, Extract]
    sha256: str | None = None
    part_sha256: Mapping[str, str] = field(default_factory=dict)
    note: str = ""

    def describe(self) -> str:
        return f"{self.repo}@{self.revision[:12]}:{self.path}"


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class UpstreamPrompt:
    """The prompts as read, with where they came from and the hash of the file."""

    source: UpstreamSource
    revision: str
    url: str
    sha256: str
    parts: dict[str, str]

    @property
    def name(self) -> str:
        return f"upstream:{self.source.repo}@{self.revision}:{self.source.path}"

    def used(self) -> dict[str, Any]:
        """What the run used, for the report: the file, its hash and each prompt's hash."""
        return {
            "source": f"{self.source.repo}@{self.revision}:{self.source.path}",
            "sha256": self.sha256,
            "prompt_sha256": {name: text_sha256(text) for name, text in self.parts.items()},
        }


@dataclass(frozen=True)
class _Pins:
    """What a load must match: the file's hash (None: not known) and each prompt's."""

    file: str | None
    parts: Mapping[str, str]


def default_cache_dir() -> Path:
    return Path(user_cache_dir("redjury")) / "upstream"


def cached_path(source: UpstreamSource, spec: UpstreamSpec) -> tuple[Path, str]:
    revision = spec.revision or source.revision
    if not revision or "/" in revision or revision.startswith("."):
        raise UpstreamError(f"invalid upstream revision {revision!r}")
    root = Path(spec.cache_dir).expanduser() if spec.cache_dir else default_cache_dir()
    folder = root / source.repo.replace("/", "__") / revision
    return folder / PurePosixPath(source.path).name, revision


def _pins(source: UpstreamSource, spec: UpstreamSpec, revision: str) -> _Pins:
    """The user's own hash replaces the pin table; another revision has no pins of redjury's."""
    if spec.sha256:
        return _Pins(spec.sha256.lower(), {})
    if revision != source.revision:
        raise UpstreamError(
            f"{source.path}: revision {revision} of {source.repo} is not the one redjury pins "
            f"({source.revision}); set scoring.upstream.sha256 to the SHA-256 of the file you trust"
        )
    return _Pins(source.sha256, source.part_sha256)


def fetch_upstream(source: UpstreamSource, spec: UpstreamSpec) -> UpstreamPrompt:
    """The source's prompts, from the cache or downloaded into it, checked against the pins
    (every load); raises UpstreamError naming the file, the expected and the found hash."""
    dest, revision = cached_path(source, spec)
    pins = _pins(source, spec, revision)
    base = (spec.base_url or RAW_GITHUB).rstrip("/")
    url = f"{base}/{source.repo}/{revision}/{source.path}"
    record = dest.with_name(dest.name + ".sha256")
    if not dest.is_file():
        if spec.offline:
            raise UpstreamError(_missing_help(url, dest, "offline"))

        def check(tmp: Path) -> None:
            _verified(tmp, source, revision, pins, url)

        try:
            download_pinned(url, dest, spec.timeout, check)
        except DownloadError as exc:
            raise UpstreamError(_missing_help(url, dest, str(exc))) from exc
        record.write_text(sha256_of(dest) + "\n", encoding="utf-8")
    recorded = record.read_text(encoding="utf-8").strip() if record.is_file() else None
    if pins.file is None and recorded:
        # No file hash pinned: the hash recorded at download catches a change since.
        pins = _Pins(recorded, pins.parts)
    where = f"{dest}; delete it to download again"
    found, parts = _verified(dest, source, revision, pins, where)
    return UpstreamPrompt(source, revision, url, found, parts)


def _verified(
    path: Path, source: UpstreamSource, revision: str, pins: _Pins, where: str
) -> tuple[str, dict[str, str]]:
    """The file's hash and prompts, once they match the pins."""
    found = sha256_of(path)
    what = f"{source.repo}@{revision}:{source.path} ({where})"
    if pins.file is not None and found != pins.file:
        raise UpstreamError(_mismatch(f"{what}: SHA-256 mismatch", pins.file, found, found))
    parts = _extract(path, source)
    for name, expected in pins.parts.items():
        got = text_sha256(parts[name])
        if got != expected:
            label = f"{what}: SHA-256 mismatch of the extracted {name!r} prompt"
            raise UpstreamError(_mismatch(label, expected, got, found))
    return found, parts


def _mismatch(what: str, expected: str, found: str, file_hash: str) -> str:
    return (
        f"{what}: expected {expected}, found {found}. If you trust this file, set "
        f"scoring.upstream.sha256: {file_hash}"
    )


def _extract(path: Path, source: UpstreamSource) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UpstreamError(f"{path}: cannot read the upstream file: {exc}") from exc
    parts: dict[str, str] = {}
    for name, extract in source.parts.items():
        try:
            parts[name] = extract(text)
        except (ValueError, SyntaxError, AttributeError) as exc:
            raise UpstreamError(f"{path}: cannot read the {name!r} prompt: {exc}") from exc
    return parts


def _missing_help(url: str, dest: Path, cause: str) -> str:
    return (
        f"the upstream judge prompt is not in the cache and cannot be downloaded ({cause}). "
        f"Download {url} and put it at {dest}"
    )


# -- the sources ------------------------------------------------------------------------------
HARMBENCH_CLS = UpstreamSource(
    repo="centerforaisafety/HarmBench",
    revision="8e1604d1171fe8a48d8febecd22f600e462bdcdd",
    path="eval_utils.py",
    parts={
        "prompt": python_value("LLAMA2_CLS_PROMPT", "prompt"),
        "prompt_contextual": python_value("LLAMA2_CLS_PROMPT", "prompt_contextual"),
    },
    sha256="46f1db751866848834d45d5128a18d4cc0a820828e89796ab51bc605d10c7058",
    part_sha256={
        "prompt": "788f4f6aa1491c433c4da76c9140cfc30966cea3ff3875c4d0fcb336d92f60e0",
        "prompt_contextual": "5d6bb9e3cf4d1e5f3f7620093113222ee115af75b0b2913f00e4c7225ec9f219",
    },
    note="LLAMA2_CLS_PROMPT['prompt'] and ['prompt_contextual'], the classifier's prompts",
)
JAILBREAKBENCH_JUDGE = UpstreamSource(
    repo="JailbreakBench/jailbreakbench",
    revision="23dbdf6b19650521604456229bc1d9c4156c85c1",
    path="src/jailbreakbench/classifier.py",
    parts={"prompt": python_value("Llama3JailbreakJudge.USER_PROMPT")},
    # The 2024 file, also in the jailbreakbench 1.0.0 wheel.
    sha256="c98fedd2cd0e94bfac49f297b1f08eebf41fa91ef0cbb46bbc897d9fdfa1dc4d",
    part_sha256={"prompt": "2bdc0b4d11a5b7e8c06528c44f2d04e01084c156e0e040380a5e2ca1a1055aa1"},
    note="Llama3JailbreakJudge.USER_PROMPT",
)
STRONGREJECT_RUBRIC = UpstreamSource(
    repo="dsbowen/strong_reject",
    revision="7a551d5b440ec7b75d4f6f5bb7c1719965b76b47",
    path="strong_reject/eval_files/judge_templates.json",
    parts={
        "system": json_value("strongreject_rubric_system"),
        "prompt": json_value("strongreject_rubric"),
    },
    # The file's own hash is not known: the prompts' are, from two agreeing copies.
    part_sha256={
        "system": "7919b6d41af2dc9f32797d96eaa952934dca0713c7f3f63ddc6c299db9857248",
        "prompt": "0a282b857e1e53ff6ec92c91eb960d2444806e2e4518f4a40232549b599963d0",
    },
    note="keys strongreject_rubric_system and strongreject_rubric",
)
_HACKAGENT = {
    "repo": "AISecurityLab/hackagent",
    "revision": "19c0ab928c40c5d94d20d7da941647b00594d360",
    "path": "hackagent/attacks/evaluator/judge_evaluators.py",
}
HACKAGENT_NUANCED = UpstreamSource(
    **_HACKAGENT,
    parts={"prompt": python_value("NuancedEvaluator.PROMPT")},
    part_sha256={"prompt": "f31c7f7a604a785c1e10b6d803887becd9227ec1f10b88a0dcd45bce38b589a6"},
    note="NuancedEvaluator.PROMPT",
)
HACKAGENT_HARMBENCH_VARIANT = UpstreamSource(
    **_HACKAGENT,
    parts={"prompt": python_value("HarmBenchVariantEvaluator.ABEL_TEMPLATE")},
    part_sha256={"prompt": "08c16daa1ca2d08f6d1385d2508360814be336df9bf67761c07a477e1406fddc"},
    note="HarmBenchVariantEvaluator.ABEL_TEMPLATE",
)
HACKAGENT_ON_TOPIC = UpstreamSource(
    **_HACKAGENT,
    parts={"prompt": python_value("OnTopicEvaluator.PROMPT")},
    part_sha256={"prompt": "5078ac08604e72ff4c8ba64fe3ce99e912faa086476d43969ac447cfda4ed31f"},
    note="OnTopicEvaluator.PROMPT",
)
