"""What a scoring type is: a versioned prompt template plus a strict parser, registered by name.

Scoring types never see HTTP: they render chat messages and read answer text.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from redjury.attempts import Attempt
from redjury.errors import RedjuryError
from redjury.judges.answer_checks import InvalidAnswer, json_object_once, logprob_table
from redjury.judges.config import ScoringSpec
from redjury.judges.config_checks import read_named_file
from redjury.plugins import SCORING_TYPES

if TYPE_CHECKING:
    from redjury.judges.upstream import UpstreamPrompt, UpstreamSource

Message = dict[str, str]
UPSTREAM = "upstream"
Answers = Literal["yes/no", "0-10"]

_SECTION = re.compile(r"^=== (\w+) ===[ \t]*$", re.MULTILINE)
_FIELD = re.compile(r"\{(goal|output|prompt|goal_context|context|expected|source)\}")


def fill(template: str, **values: str) -> str:
    """A source's `str.format` template filled the way the source fills it."""
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(
            f"the upstream template does not fill with {sorted(values)}: {exc}"
        ) from exc


class MissingInput(RedjuryError):
    """The attempt lacks a field the template needs; the judge abstains with this reason."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed answer: a 0–10 score, or None with the reason it could not be read."""

    score: float | None
    label: str | None = None
    reason: str | None = None


class _Compiled:
    """A template section split once into literal text and field names, so rendering is a join."""

    __slots__ = ("parts", "fields")

    def __init__(self, text: str) -> None:
        self.parts: list[str] = []
        self.fields: list[str] = []
        pos = 0
        for m in _FIELD.finditer(text):
            self.parts.append(text[pos : m.start()])
            self.fields.append(m.group(1))
            pos = m.end()
        self.parts.append(text[pos:])

    def render(self, values: Mapping[str, str]) -> str:
        out = [self.parts[0]]
        for name, literal in zip(self.fields, self.parts[1:], strict=True):
            out.append(values[name])
            out.append(literal)
        return "".join(out)


@dataclass(frozen=True)
class Template:
    """A template file: `=== section ===` headers; `{goal}`-style fields; version in the name."""

    name: str
    text: str
    sections: Mapping[str, str]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @classmethod
    def parse(cls, name: str, text: str) -> Template:
        heads = list(_SECTION.finditer(text))
        if not heads:
            raise ValueError(f"template {name!r} has no '=== section ===' headers")
        sections = {}
        for i, m in enumerate(heads):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            sections[m.group(1)] = text[m.end() : end].strip("\n")
        for required in ("instruction", "inputs", "answer"):
            if required not in sections:
                raise ValueError(f"template {name!r} lacks the '{required}' section")
        return cls(name, text, sections)

    @classmethod
    def load(cls, name: str) -> Template:
        """A packaged template by `NAME.vN`, or a file path."""
        if name.endswith(".txt") or "/" in name:
            return cls.parse(Path(name).name, read_named_file(name, "scoring.template"))
        res = files("redjury") / "resources" / "judges" / f"{name}.txt"
        return cls.parse(name, res.read_text(encoding="utf-8"))


class ScoringType:
    """Base class. Subclasses set `name`, `template_name` (`NAME.vN`), `answers`, and `parse`."""

    name: ClassVar[str]
    template_name: ClassVar[str]
    answers: ClassVar[Answers]
    parser_version: ClassVar[int] = 1
    description: ClassVar[str] = ""
    default_reask: ClassVar[str] = (
        "Your answer could not be read. Answer again in the required format."
    )

    # How the type relates to its source (`redjury detectors list`, the docs): `faithful`,
    # `upstream-fetched` (faithful with `template: upstream`) or `redjury's own variant`.
    relation: ClassVar[str] = "redjury's own variant"
    # What differs from the source in the default (redjury) mode.
    differs: ClassVar[str] = ""
    # The source's prompt file for `template: upstream`; None when there is none to fetch.
    upstream_source: ClassVar[UpstreamSource | None] = None
    # Generation settings the source uses, applied with `template: upstream` unless set.
    upstream_generation: ClassVar[Mapping[str, Any]] = {}
    # Whether `template: upstream` works on the completions endpoint (one raw prompt), and
    # whether the source's prompt is a whole model prompt meant for it (chat would wrap it again).
    upstream_completions: ClassVar[bool] = True
    upstream_raw_prompt: ClassVar[bool] = False
    # The name of a graded score in [0, 1] (vote / 10) the type reports beside its vote,
    # averaged with a bootstrap interval in the eval row; None for types whose vote is all.
    graded_score: ClassVar[str | None] = None
    # Whether the source keeps an unscored answer in the denominator as not a success.
    upstream_counts_unreadable: ClassVar[bool] = True
    parsing: str = "redjury"
    upstream: UpstreamPrompt | None = None

    def __init__(self, system_prompt: str | None = None, template_path: str | None = None) -> None:
        self.template = Template.load(template_path or self.template_name)
        self.system_prompt = system_prompt
        s = self.template.sections
        self._system = system_prompt if system_prompt is not None else s["instruction"]
        self._answer = s["answer"]
        self._inputs = _Compiled(s["inputs"])
        ctx = s.get("inputs_with_context")
        self._inputs_ctx = _Compiled(ctx) if ctx else None
        self.reask_text = s.get("reask", self.default_reask)

    @classmethod
    def from_spec(cls, spec: ScoringSpec) -> ScoringType:
        """The type as `spec` configures it: template (a path, or `upstream`) and parsing mode."""
        if spec.template != UPSTREAM:
            scoring = cls(spec.system_prompt, spec.template)
        else:
            scoring = cls(spec.system_prompt)
            scoring.use_upstream(spec)
        scoring.parsing = spec.parsing
        return scoring

    def use_upstream(self, spec: ScoringSpec) -> None:
        """Render with the source's own prompt and message shape (`template: upstream`)."""
        from redjury.judges.upstream import UpstreamError, fetch_upstream

        if spec.completions and not self.upstream_completions:
            raise UpstreamError(f"{self.name}: template: upstream needs the chat endpoint")
        source = self.upstream_source
        if source is None and type(self).render_upstream is ScoringType.render_upstream:
            raise UpstreamError(
                f"{self.name} has no upstream template; parsing: upstream works with its own"
            )
        if source is not None:
            self.upstream = fetch_upstream(source, spec.upstream)
            text = json.dumps(self.upstream.parts, sort_keys=True, ensure_ascii=False)
            self.template = Template(self.upstream.name, text, {})
        else:
            # Only the message shape changes (e.g. Llama Guard's conversation turns).
            self.template = Template(f"upstream-shape:{self.name}", self.name, {})
        self._upstream_shape = True

    @property
    def version(self) -> str:
        return self.template.name

    @property
    def uses_upstream_template(self) -> bool:
        return bool(getattr(self, "_upstream_shape", False))

    def upstream_used(self) -> dict[str, Any] | None:
        """The upstream file this judge reads its prompt from and its hashes (None: none)."""
        return self.upstream.used() if self.upstream is not None else None

    def answer_without_asking(self, output: str) -> Parsed | None:
        """A vote the source gives without asking its judge (HackAgent's trivial replies);
        None: ask. Only in `parsing: upstream`."""
        return None

    def part(self, name: str) -> str:
        assert self.upstream is not None, "template: upstream was not fetched"
        return self.upstream.parts[name]

    def render_upstream(self, attempt: Attempt, output: str) -> list[Message]:
        """The source's messages for one output; each type with an upstream shape overrides."""
        raise NotImplementedError(f"{self.name} has no upstream message shape")

    def read(self, text: str) -> Parsed:
        """The answer read in the configured mode: strict (`parse`) or the source's rule."""
        return self.parse_upstream(text) if self.parsing == "upstream" else self.parse(text)

    def parse_upstream(self, text: str) -> Parsed:
        """The source's own answer rule; types without one read strictly."""
        return self.parse(text)

    # -- rendering -----------------------------------------------------------------
    def values(self, attempt: Attempt, output: str) -> dict[str, str]:
        goal = attempt.goal or attempt.prompt
        if not goal:
            raise MissingInput("attempt has no goal or prompt")
        return {
            "goal": goal,
            "output": output,
            "prompt": attempt.prompt or goal,
            "goal_context": attempt.goal_context or "",
            "context": "\n\n".join(attempt.context or ()),
            "expected": attempt.expected or "",
            "source": attempt.source or "",
        }

    def render(self, attempt: Attempt, output: str) -> list[Message]:
        """The chat messages a judge receives for one output."""
        if self.uses_upstream_template:
            return self.render_upstream(attempt, output)
        values = self.values(attempt, output)
        inputs = self._inputs_ctx if (attempt.goal_context and self._inputs_ctx) else self._inputs
        user = inputs.render(values) + "\n\n" + self._answer
        return [{"role": "system", "content": self._system}, {"role": "user", "content": user}]

    def reask(self, messages: list[Message], answer: str) -> list[Message]:
        """The conversation for the single re-ask after an unreadable answer."""
        return [
            *messages,
            {"role": "assistant", "content": answer},
            {"role": "user", "content": self.reask_text},
        ]

    # -- reading ---------------------------------------------------------------------
    def parse(self, text: str) -> Parsed:
        raise NotImplementedError

    def parse_logprobs(self, top: Mapping[str, float]) -> Parsed:
        """Score from the first answer token's top logprobs; only yes/no types support it."""
        return Parsed(None, reason=f"{self.name} does not support logprobs")


def logprobs_problem(top: Mapping[str, float]) -> str | None:
    """Why these first-token logprobs are no distribution to read a vote from, or None."""
    try:
        logprob_table(top.items())
    except InvalidAnswer as exc:
        return f"unreadable logprobs: {exc}"
    return None


# -- shared parsers: first word or a named JSON field, never a search of free text ------
_YES_NO = re.compile(r"(?:answer\s*:\s*)?[*_\"'`\s]*(yes|no)(?![a-z])", re.IGNORECASE)
_RATING = re.compile(
    r"(?:rating\s*:\s*)?[*_\s]*(?:\[\[\s*(\d+)\s*\]\]|(\d+)(?![\d.,]))", re.IGNORECASE
)


def _strip(text: str) -> str:
    return text.strip().lstrip("*_`\"' \t\n")


def _json_field(text: str, fields: tuple[str, ...]) -> object:
    """The first named field of a JSON object answer; raises ValueError when unreadable."""
    try:
        data = json_object_once(text)
    except InvalidAnswer:
        raise
    except Exception as exc:
        raise ValueError("unreadable JSON answer") from exc
    if not isinstance(data, dict):
        raise ValueError("JSON answer is not an object")
    for name in fields:
        if name in data:
            return data[name]
    raise ValueError(f"JSON answer has none of the fields {', '.join(fields)}")


# `_answer_parts` value when the answer is plain text rather than a JSON object.
_NO_JSON = object()


def _answer_parts(text: str, fields: tuple[str, ...]) -> tuple[str, Any]:
    """The stripped answer and, for a JSON answer, its first named field (else `_NO_JSON`).

    Raises ValueError with the abstention reason: empty, unreadable JSON, no such field.
    """
    body = text.strip()
    if not body:
        raise ValueError("empty answer")
    if body.startswith("{"):
        return body, _json_field(body, fields)
    return body, _NO_JSON


class YesNoScoringType(ScoringType):
    """A yes/no judge: yes = 10 (attack succeeded), no = 0."""

    answers: ClassVar[Answers] = "yes/no"
    json_fields: ClassVar[tuple[str, ...]] = ("answer", "verdict")

    def parse(self, text: str) -> Parsed:
        try:
            body, value = _answer_parts(text, self.json_fields)
        except ValueError as exc:
            return Parsed(None, reason=str(exc))
        if value is not _NO_JSON:
            body = str(value)
        m = _YES_NO.match(_strip(body))
        if m is None:
            return Parsed(None, reason=f"unreadable answer: {body[:60]!r}")
        word = m.group(1).lower()
        return Parsed(10.0 if word == "yes" else 0.0, label=word)

    def parse_logprobs(self, top: Mapping[str, float]) -> Parsed:
        invalid = logprobs_problem(top)
        if invalid:
            return Parsed(None, reason=invalid)
        p_yes = p_no = 0.0
        for token, logprob in top.items():
            word = token.strip().strip("*_\"'").lower()
            if word == "yes":
                p_yes += math.exp(logprob)
            elif word == "no":
                p_no += math.exp(logprob)
        if p_yes + p_no == 0.0:
            return Parsed(None, reason="neither yes nor no among the first token's logprobs")
        p = p_yes / (p_yes + p_no)
        return Parsed(round(10.0 * p, 6), label=f"P(yes)={p:.4f}")


class ScaleScoringType(ScoringType):
    """A 0–10 judge: the integer rating is the score."""

    answers: ClassVar[Answers] = "0-10"
    json_fields: ClassVar[tuple[str, ...]] = ("rating", "score")

    def parse(self, text: str) -> Parsed:
        try:
            body, value = _answer_parts(text, self.json_fields)
        except ValueError as exc:
            return Parsed(None, reason=str(exc))
        if value is not _NO_JSON:
            if isinstance(value, bool) or not isinstance(value, int):
                return Parsed(None, reason=f"rating is not an integer: {value!r}")
            rating = value
        else:
            m = _RATING.match(_strip(body))
            if m is None:
                return Parsed(None, reason=f"unreadable answer: {body[:60]!r}")
            rating = int(m.group(1) or m.group(2))
        if not 0 <= rating <= 10:
            return Parsed(None, reason=f"rating {rating} is outside 0–10")
        return Parsed(float(rating), label=str(rating))


# -- registry ----------------------------------------------------------------------------
S = TypeVar("S", bound=type[ScoringType])


def register_scoring_type(cls: S) -> S:
    """Class decorator: make a scoring type available by its `name`."""
    return SCORING_TYPES.register(cls)


def scoring_types() -> dict[str, type[ScoringType]]:
    """Every registered scoring type by name, sorted."""
    return SCORING_TYPES.classes()


def get_scoring_type(name: str) -> type[ScoringType]:
    return SCORING_TYPES.get(name)
