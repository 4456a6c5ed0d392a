"""Masking secrets and found PII in everything redjury writes (last four characters kept),
and stripping credentials from URLs before one is written or printed."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from redjury.detectors.base import Detector, mask
from redjury.detectors.pii import PIILeakDetector
from redjury.detectors.text_view import might_spell_at, normalised

# Values shorter than this are not masked inside text: masking "a" everywhere would
# destroy the report and protect nothing.
MIN_SECRET_LENGTH = 4


class Redactor:
    """Replaces every occurrence of the given literal values inside strings of a JSON value.

    Plain `str.replace` per value, longest first: the sets are small (a few markers, the
    PII found in one attempt) and this beats compiling a regex per attempt.
    """

    __slots__ = ("values", "_masks", "_read_forms")

    def __init__(self, values: Iterable[str] = ()) -> None:
        kept = {v for v in values if v and len(v) >= MIN_SECRET_LENGTH}
        self.values: tuple[str, ...] = tuple(
            sorted(kept | _quoted_forms(kept), key=len, reverse=True)
        )
        self._masks = tuple(mask(v) for v in self.values)
        # Each value as a matcher reads it, for texts that must be read first (see `text`).
        self._read_forms = tuple(
            (read, masked)
            for read, masked in zip(map(_read_form, self.values), self._masks, strict=True)
            if len(read) >= MIN_SECRET_LENGTH
        )

    def __bool__(self) -> bool:
        return bool(self.values)

    def with_values(self, values: Iterable[str]) -> Redactor:
        extra = [v for v in values if v and len(v) >= MIN_SECRET_LENGTH and v not in self.values]
        if not extra:
            return self
        return Redactor([*self.values, *extra])

    def text(self, value: str) -> str:
        """`value` with every occurrence masked: as written, and as read through full-width
        forms, invisible characters and JSON `\\uXXXX` escapes (the original span masked)."""
        for secret, masked in zip(self.values, self._masks, strict=True):
            if secret in value:
                value = value.replace(secret, masked)
        if value.isascii() and "\\u" not in value:
            return value  # nothing to read through: the common case
        return self._mask_read(value)

    def _mask_read(self, value: str) -> str:
        view = normalised(value, escapes=True)
        if view is None:
            return value
        spans = sorted(
            (span, masked)
            for read, masked in self._read_forms
            for span in view.original_spans(read)
        )
        return _masked_spans(value, spans)

    def apply(self, value: Any) -> Any:
        """A copy of a JSON value with every string masked."""
        if not self.values:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                self.text(k) if isinstance(k, str) else k: self.apply(v) for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.apply(v) for v in value]
        return value


def _read_form(value: str) -> str:
    view = normalised(value)
    return value if view is None else view.text


def _masked_spans(value: str, spans: list[tuple[tuple[int, int], str]]) -> str:
    """`value` with each (start, end) span, in order, replaced by its mask; a span that
    overlaps one already masked is skipped."""
    parts: list[str] = []
    done = 0
    for (start, end), masked in spans:
        if start < done:
            continue
        parts += [value[done:start], masked]
        done = end
    return "".join(parts) + value[done:] if parts else value


def _quoted_forms(values: set[str]) -> set[str]:
    """How a value reads inside a JSON string (a judge may echo the request body it got):
    quotes, backslashes, control and non-ASCII characters come back escaped."""
    forms: set[str] = set()
    for v in values:
        if v.isascii() and v.isprintable() and '"' not in v and "\\" not in v:
            continue
        forms.add(json.dumps(v)[1:-1])
        forms.add(json.dumps(v, ensure_ascii=False)[1:-1])
    return forms - values


# -- URLs --------------------------------------------------------------------------------
# `scheme://userinfo@` anywhere in a text; the user info ends at the first "/", "?", "#",
# or whitespace, and its last "@" ends it (a password may hold an "@" of its own).
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")


def strip_url_credentials(text: str) -> str:
    """`text` with the user info (`user:password@`) of every URL in it removed."""
    if "@" not in text or "://" not in text:
        return text
    return _URL_USERINFO.sub(r"\1", text)


def without_url_credentials(value: Any) -> Any:
    """A copy of a JSON value (a config dump) whose strings hold no URL user info."""
    if isinstance(value, str):
        return strip_url_credentials(value)
    if isinstance(value, dict):
        return {k: without_url_credentials(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_url_credentials(v) for v in value]
    return value


def url_credentials(url: str | None) -> list[str]:
    """The secrets a URL carries in its user info (whole, decoded, as Basic auth, and the
    password), to be masked wherever they still turn up; empty when it carries none."""
    if not url or "@" not in url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    userinfo, sep, _ = parts.netloc.rpartition("@")
    if not sep or not userinfo:
        return []
    plain = unquote(userinfo)
    # An HTTP client turns user info into `Authorization: Basic base64(user:password)`.
    found = [userinfo, plain, base64.b64encode(plain.encode()).decode("ascii")]
    if parts.password:
        found += [parts.password, unquote(parts.password)]
    return list(dict.fromkeys(found))


# -- judges' answers ----------------------------------------------------------------------
def mask_found_pii(text: str) -> str:
    """`text` with every card number, SSN and email address the PII detector finds in it
    masked: a judge quoting the reply it judged must not carry the PII out with it."""
    if "@" not in text and _DIGIT.search(text) is None and not might_spell_at(text):
        return text  # the common answer ("Yes", "unsafe"): nothing a scan could find
    for value in sorted(_PII.scan(text, escapes=True).sensitive, key=len, reverse=True):
        text = text.replace(value, mask(value))
    return text


_PII = PIILeakDetector()
_DIGIT = re.compile(r"\d")  # any script's digits: a full-width card is one


def credentials_of(detector: Detector) -> list[str]:
    """A detector's credentials (judge API keys, header values, URL user info)."""
    get = getattr(detector, "credentials", None)
    return list(get()) if callable(get) else []


def run_redactors(detectors: Iterable[Detector]) -> tuple[Redactor, Redactor]:
    """The run's two redactors, `(markers, always)`: configured markers (masked in outputs
    unless --no-redact) and credentials (masked everywhere, always). Every detector that
    asks a judge model is armed with both, so its judges' answers are masked at the source,
    before they reach the judge cache or any report."""
    detectors = list(detectors)
    always_values: list[str] = []
    marker_values: list[str] = []
    for det in detectors:
        creds = credentials_of(det)
        always_values += creds
        marker_values += [s for s in det.secrets() if s not in creds]
    markers, always = Redactor(marker_values), Redactor(always_values)
    both = markers.with_values(always.values)
    for det in detectors:
        arm = getattr(det, "mask_answers_with", None)
        if callable(arm):
            arm(both)
    return markers, always


HEADER_VALUE_MASK = "****"


def without_header_values(value: Any) -> Any:
    """A copy of a config dump with the values of every `headers` mapping masked whole,
    whatever their length: text masking keeps four characters and skips shorter values,
    and a configured header value (`x-team: red`) belongs in no report."""
    if isinstance(value, dict):
        return {
            k: {h: HEADER_VALUE_MASK for h in v}
            if k == "headers" and isinstance(v, dict)
            else without_header_values(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [without_header_values(v) for v in value]
    return value
