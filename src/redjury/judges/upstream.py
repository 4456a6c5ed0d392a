"""The sources' own judge prompts (`scoring.template: upstream`): downloaded at run time from the
source repository at a pinned revision, checked and cached like the HarmBench data; never stored
in redjury's repository. Each source names the file and the value inside it that holds a prompt.

SHA-256: a source's `sha256` pins the file's bytes where redjury could verify them. Where it
could not (the text it saw was a search index's copy, not the raw bytes), the pin is None and
the hash of the first download is recorded beside the cached file (`NAME.sha256`): later runs
check the cache against it, and the hash goes into the judge's fingerprint and the report.
`scoring.upstream.sha256` pins a hash of your own.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from platformdirs import user_cache_dir

from redjury.downloads import DownloadError, check_sha256, download_pinned, sha256_of
from redjury.judges.config import UpstreamSpec

RAW_GITHUB = "https://raw.githubusercontent.com"

# A function that pulls one prompt out of a file's text; raises ValueError when absent.
Extract = Callable[[str], str]


class UpstreamError(ValueError):
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
    """One file of a source repository and the prompts inside it, at a pinned revision."""

    repo: str
    revision: str
    path: str
    parts: Mapping[str, Extract]
    sha256: str | None = None
    note: str = ""

    def describe(self) -> str:
        return f"{self.repo}@{self.revision[:12]}:{self.path}"


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


def default_cache_dir() -> Path:
    return Path(user_cache_dir("redjury")) / "upstream"


def cached_path(source: UpstreamSource, spec: UpstreamSpec) -> tuple[Path, str]:
    revision = spec.revision or source.revision
    if not revision or "/" in revision or revision.startswith("."):
        raise UpstreamError(f"invalid upstream revision {revision!r}")
    root = Path(spec.cache_dir).expanduser() if spec.cache_dir else default_cache_dir()
    folder = root / source.repo.replace("/", "__") / revision
    return folder / PurePosixPath(source.path).name, revision


def fetch_upstream(source: UpstreamSource, spec: UpstreamSpec) -> UpstreamPrompt:
    """The source's prompts, from the cache or downloaded into it; raises UpstreamError."""
    dest, revision = cached_path(source, spec)
    pinned = spec.sha256 or (source.sha256 if revision == source.revision else None)
    base = (spec.base_url or RAW_GITHUB).rstrip("/")
    url = f"{base}/{source.repo}/{revision}/{source.path}"
    record = dest.with_name(dest.name + ".sha256")
    what = f"{source.path}: SHA-256 mismatch for {source.repo} revision {revision}"
    try:
        if not dest.is_file():
            if spec.offline:
                raise UpstreamError(_missing_help(url, dest, "offline"))
            try:
                download_pinned(
                    url, dest, spec.timeout, lambda tmp: check_sha256(tmp, pinned, what, url)
                )
            except DownloadError as exc:
                if "SHA-256" in str(exc):
                    raise
                raise UpstreamError(_missing_help(url, dest, str(exc))) from exc
            record.write_text(sha256_of(dest) + "\n", encoding="utf-8")
        recorded = record.read_text(encoding="utf-8").strip() if record.is_file() else None
        where = f"cached at {dest}; delete it to download again"
        check_sha256(dest, pinned or recorded, what, where)
    except DownloadError as exc:
        raise UpstreamError(str(exc)) from exc
    text = dest.read_text(encoding="utf-8")
    parts: dict[str, str] = {}
    for name, extract in source.parts.items():
        try:
            parts[name] = extract(text)
        except (ValueError, SyntaxError, AttributeError) as exc:
            raise UpstreamError(f"{dest}: cannot read the {name!r} prompt: {exc}") from exc
    return UpstreamPrompt(source, revision, url, sha256_of(dest), parts)


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
    note="LLAMA2_CLS_PROMPT['prompt'] and ['prompt_contextual'], the classifier's prompts",
)
JAILBREAKBENCH_JUDGE = UpstreamSource(
    repo="JailbreakBench/jailbreakbench",
    revision="23dbdf6b19650521604456229bc1d9c4156c85c1",
    path="src/jailbreakbench/classifier.py",
    parts={"prompt": python_value("Llama3JailbreakJudge.USER_PROMPT")},
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
    note="NuancedEvaluator.PROMPT",
)
HACKAGENT_HARMBENCH_VARIANT = UpstreamSource(
    **_HACKAGENT,
    parts={"prompt": python_value("HarmBenchVariantEvaluator.ABEL_TEMPLATE")},
    note="HarmBenchVariantEvaluator.ABEL_TEMPLATE",
)
HACKAGENT_ON_TOPIC = UpstreamSource(
    **_HACKAGENT,
    parts={"prompt": python_value("OnTopicEvaluator.PROMPT")},
    note="OnTopicEvaluator.PROMPT",
)
