"""inspect_ai eval logs, both `.json` and the `.eval` zip (`header.json` plus one
`samples/<id>_epoch_<n>.json` per sample and epoch).

One attempt per sample and epoch. The reply is the text of the assistant turns after the
last user turn (`reasoning` parts are not the reply); the transcript is `messages`.
inspect's scores are carried as `inspect:<scorer>` detector results, read the way
inspect's own `value_to_float` reads them and turned onto redjury's scale, where 1 means
the check failed: inspect's 1.0 (`C`, `yes`, `true`, 1) is 0.0 here, `I` (0) is 1.0, `P`
is 0.5, and a number v in [0, 1] is 1 - v. `N` (no answer), a missing score, and values
inspect would only guess at (other strings, numbers outside [0, 1]) are null."""

from __future__ import annotations

import math
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from redjury.formats.base import (
    ZIP_SIGNATURES,
    DocumentError,
    DocumentFormat,
    Located,
    attempt_record,
    bad,
    document_error,
    guarded,
    last_user_text,
    listed,
    mapping,
    number,
    reply_after_last_user,
    text_of,
)
from redjury.formats.streamed import START_ARRAY, head, items, values_at
from redjury.formats.zipped import (
    ArchiveError,
    ArchiveLimits,
    open_archive,
    read_member,
)
from redjury.plugins import FORMATS
from redjury.records import InputRecord, loads_json

_HEAD = re.compile(rb'(?<!\\)"eval"\s*:\s*\{')
_SAMPLE_NAME = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json$")
_LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
_INTENT_KEYS = ("intent", "category", "risk_category", "harm_category", "hazard")
_GOAL_KEYS = ("goal", "objective", "behavior")


def claims(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("eval"), dict)
        and "task" in doc["eval"]
        and any(k in doc for k in ("samples", "status", "version", "results"))
    )


def read(path: Path) -> Iterator[InputRecord]:
    records = _zip_records(path) if is_zip(path) else _json_records(path)
    return guarded(path, records)


def is_zip(path: Path) -> bool:
    """Whether the file starts as a zip archive does (whole, cut short or damaged)."""
    with path.open("rb") as fh:
        return fh.read(4) in ZIP_SIGNATURES


_LOG_HEAD = frozenset({"eval", "version", "status", "results"})
_SAMPLES = frozenset({("samples", START_ARRAY)})


def _json_records(path: Path) -> Iterator[InputRecord]:
    top = head(path, _LOG_HEAD, _SAMPLES)
    log = top.values
    if "eval" not in log and top.stop is not None:  # the samples come first
        log = {**log, **values_at(path, frozenset({"eval", "version"}))}
    if not claims({**log, "samples": []} if top.stop else log):
        raise document_error(path, "eval", "not an inspect_ai log")
    if top.stop is None:
        raise document_error(path, "samples", "the log holds no samples (logged without them?)")
    count = 0
    for i, sample in enumerate(items(path, "samples.item")):
        count += 1
        yield _sample_record(path, i + 1, sample, log)
    if not count:
        raise document_error(path, "samples", "the log holds no samples (logged without them?)")


def _zip_records(path: Path) -> Iterator[InputRecord]:
    with path.open("rb") as fh:
        try:
            limits = ArchiveLimits.from_environment()
            archive = open_archive(fh, limits)
        except ArchiveError as exc:
            raise document_error(path, exc.member, exc.reason) from None
        with archive:
            yield from _zip_samples(path, archive, limits)


def _zip_samples(
    path: Path, archive: zipfile.ZipFile, limits: ArchiveLimits
) -> Iterator[InputRecord]:
    names = set(archive.namelist())
    header = _zip_header(path, archive, names, limits)
    samples = sorted((n for n in names if _SAMPLE_NAME.match(n)), key=_sample_order)
    if not samples:
        raise document_error(path, "samples/", "the log holds no samples")
    for i, name in enumerate(samples):
        try:
            sample = _zip_json(path, archive, name, limits)
        except DocumentError as exc:
            m = _SAMPLE_NAME.match(name)
            assert m is not None
            where = f"sample {m.group('id')} epoch {m.group('epoch')}"
            yield bad(path, Located(i + 1, where), "(sample)", exc.error.reason)
            continue
        yield _sample_record(path, i + 1, sample, header)


def _zip_header(
    path: Path, archive: zipfile.ZipFile, names: set[str], limits: ArchiveLimits
) -> dict[str, Any]:
    """The log header: `header.json` once the run finished; while it runs (or in the first
    `.eval` layout) the eval spec from `start.json` and the status from `results.json`."""
    if "header.json" in names:
        header = _zip_json(path, archive, "header.json", limits)
    else:
        start = next((n for n in ("_journal/start.json", "start.json") if n in names), None)
        if start is None:
            raise document_error(path, "header.json", "missing from the .eval archive")
        header = _zip_json(path, archive, start, limits)
        if isinstance(header, dict) and "results.json" in names:
            results = _zip_json(path, archive, "results.json", limits)
            header = {**header, **(results if isinstance(results, dict) else {})}
    if not claims(header):
        raise document_error(path, "header.json", "not an inspect_ai log header")
    return cast(dict[str, Any], header)


def _zip_json(path: Path, archive: zipfile.ZipFile, name: str, limits: ArchiveLimits) -> Any:
    try:
        raw = read_member(archive, name, limits)
    except ArchiveError as exc:
        raise document_error(path, name, f"unreadable: {exc.reason}") from exc
    try:
        return loads_json(raw)
    except ValueError as exc:
        raise document_error(path, name, f"not JSON: {str(exc).split(':', 1)[0]}") from exc


def _sample_order(name: str) -> tuple[int, str, int]:
    m = _SAMPLE_NAME.match(name)
    assert m is not None
    sid = m.group("id")
    return (int(sid) if sid.isdigit() else -1, sid, int(m.group("epoch")))


def _sample_record(path: Path, ordinal: int, sample: Any, log: dict[str, Any]) -> InputRecord:
    if not isinstance(sample, dict):
        return bad(path, Located(ordinal, f"sample #{ordinal}"), "(sample)", "not a JSON object")
    sid, epoch = sample.get("id"), sample.get("epoch", 1)
    at = Located(ordinal, f"sample {sid} epoch {epoch}")
    if sid is None or isinstance(sid, bool) or not isinstance(sid, str | int):
        return bad(path, at, "id", "missing or not a string or number")
    messages = sample.get("messages")
    if messages is not None and not isinstance(messages, list):
        return bad(path, at, "messages", "not a list")
    return attempt_record(path, at, _sample_fields(sample, log, path))


def _sample_fields(sample: dict[str, Any], log: dict[str, Any], path: Path) -> dict[str, Any]:
    spec = log["eval"]
    attachments = mapping(sample.get("attachments"))
    turns = [_turn(m, attachments) for m in sample.get("messages") or [] if isinstance(m, dict)]
    # The completion the scorers saw stands in when no assistant turn follows the last
    # user turn (a transcript that ends on a user note) or there is no transcript.
    reply = (reply_after_last_user(turns) if turns else None) or _completion(sample.get("output"))
    metadata = mapping(sample.get("metadata"))
    key = spec.get("eval_id") or spec.get("task_id") or spec.get("run_id") or path.name
    scores, raw_scores = scores_of(sample, log)
    return {
        "id": f"{key}:{sample['id']}:{sample.get('epoch', 1)}",
        "probe": f"inspect:{spec.get('task') or 'task'}",
        "goal": next((metadata[k] for k in _GOAL_KEYS if isinstance(metadata.get(k), str)), None),
        "prompt": _input_text(sample.get("input"), attachments) or last_user_text(turns),
        "outputs": [None if sample.get("error") else reply],
        "messages": turns or None,
        "expected": _target(sample.get("target")),
        "intent": next(
            (metadata[k] for k in _INTENT_KEYS if isinstance(metadata.get(k), str)), None
        ),
        "generator": spec.get("model"),
        "run_id": spec.get("run_id"),
        "latency_ms": (t * 1000.0) if (t := number(sample.get("total_time"))) is not None else None,
        "usage": _usage(sample.get("model_usage"), spec.get("model")),
        "notes": _sample_notes(sample, log, raw_scores, metadata),
        "detector_results": scores,
    }


def _sample_notes(
    sample: dict[str, Any], log: dict[str, Any], raw_scores: dict[str, Any], meta: dict[str, Any]
) -> dict[str, Any]:
    notes: dict[str, Any] = {
        "source_format": f"inspect_ai log v{log.get('version', '?')}",
        "sample_id": sample.get("id"),
        "epoch": sample.get("epoch", 1),
    }
    for name, value in (("inspect_scores", raw_scores), ("metadata", meta)):
        if value:
            notes[name] = value
    if sample.get("error"):
        notes["error"] = _error_text(sample["error"])
    return notes


def _resolve(text: Any, attachments: dict[str, Any]) -> Any:
    """inspect stores long content once, as `attachment://<hash>`, in `attachments`."""
    if isinstance(text, str) and text.startswith("attachment://"):
        return attachments.get(text.removeprefix("attachment://"), text)
    return text


def content_text(content: Any, attachments: dict[str, Any]) -> str | None:
    """A message's text: a string, or the text parts of typed content (not reasoning)."""
    content = _resolve(content, attachments)
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        return text_of(content)
    texts = [
        _resolve(part.get("text"), attachments)
        for part in content
        if isinstance(part, dict) and part.get("type") == "text"
    ]
    joined = "\n".join(t for t in texts if isinstance(t, str) and t)
    return joined or None


def _turn(message: dict[str, Any], attachments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": str(message.get("role") or "unknown"),
        "content": content_text(message.get("content"), attachments),
    }


def _input_text(value: Any, attachments: dict[str, Any]) -> str | None:
    value = _resolve(value, attachments)
    if isinstance(value, list):
        turns = [_turn(m, attachments) for m in value if isinstance(m, dict)]
        return last_user_text(turns)
    return value if isinstance(value, str) else None


def _completion(output: Any) -> str | None:
    if isinstance(output, dict) and isinstance(output.get("completion"), str):
        return output["completion"] or None
    return None


def _target(target: Any) -> str | None:
    if isinstance(target, list):
        return "\n".join(str(t) for t in target) or None
    return target if isinstance(target, str) and target else None


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


def _usage(model_usage: Any, model: Any) -> dict[str, int] | None:
    if not isinstance(model_usage, dict) or not model_usage:
        return None
    usage = model_usage.get(model)
    if usage is None and len(model_usage) == 1:
        usage = next(iter(model_usage.values()))
    if not isinstance(usage, dict):
        return None
    keys = {
        "input_tokens": "prompt_tokens",
        "output_tokens": "completion_tokens",
        "total_tokens": "total_tokens",
    }
    out = {
        ours: usage[k]
        for k, ours in keys.items()
        if isinstance(usage.get(k), int) and not isinstance(usage[k], bool) and usage[k] >= 0
    }
    return out or None


def value_to_redjury(value: Any) -> float | None:
    """An inspect score value on redjury's scale (1 = the check failed); None abstains."""
    if value is None or isinstance(value, list | dict):
        return None
    if isinstance(value, bool | int | float):
        v: float | None = float(value)
    elif value in _LETTERS:
        v = _LETTERS[value]
    elif isinstance(value, str):
        low = value.strip().lower()
        v = _WORDS.get(low)
        if v is None and low.replace(".", "", 1).isdigit():
            v = float(low)
    else:
        v = None
    if v is None or math.isnan(v) or not 0.0 <= v <= 1.0:
        return None
    return 1.0 - v


def _scorer_names(log: dict[str, Any]) -> list[str]:
    scorers = listed(log["eval"].get("scorers"))
    return [s["name"] for s in scorers if isinstance(s, dict) and isinstance(s.get("name"), str)]


def scores_of(
    sample: dict[str, Any], log: dict[str, Any]
) -> tuple[dict[str, list[float | None]], dict[str, Any]]:
    """(`inspect:<scorer>` verdicts, one per output; the raw values as inspect wrote them).

    Every scorer the log names gets a verdict, null where the sample has no score; a
    scorer whose value is a dict of metrics gives one `inspect:<scorer>/<metric>` each.
    """
    scores = sample.get("scores")
    if not isinstance(scores, dict):
        scores = {}
        if isinstance(sample.get("score"), dict):  # logs before `scores` held one score
            names = _scorer_names(log)
            scores = {names[0] if names else "score": sample["score"]}
    verdicts: dict[str, list[float | None]] = {}
    raw: dict[str, Any] = {}
    for name in _scorer_names(log):
        verdicts.setdefault(f"inspect:{name}", [None])
    for name, score in scores.items():
        value = score.get("value") if isinstance(score, dict) else None
        raw[name] = value
        if isinstance(value, dict):
            verdicts.pop(f"inspect:{name}", None)
            for metric, v in value.items():
                verdicts[f"inspect:{name}/{metric}"] = [value_to_redjury(v)]
        else:
            verdicts[f"inspect:{name}"] = [value_to_redjury(value)]
    return verdicts, raw


FORMAT = FORMATS.register(
    DocumentFormat(
        name="inspect_ai", claims=claims, head=lambda head: bool(_HEAD.search(head)), read=read
    )
)
