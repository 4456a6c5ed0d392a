"""Two runs compared: their reports read into per-attempt counts, paired by attempt, and one
`comparison` row per probe × detector, intent × detector and detector overall (never written)."""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import msgspec
import numpy as np

from redjury.errors import CompareError
from redjury.report.digest import evaluator_of, report_path_of
from redjury.stats.settings import Correction

_Rate = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


class _CorrectionRecord(msgspec.Struct, gc=False):
    """An eval row's `confidence_correction` / `interval_correction`: the Se and Sp its
    interval was corrected with, and where they came from."""

    se: _Rate | None = None
    sp: _Rate | None = None
    source: str | None = None


class _Row(msgspec.Struct, gc=False):
    """The fields of a report row the comparison reads; everything else is skipped (the prompt
    and goal are only hashed, to pair attempts). Untracked by the garbage collector: a chunk
    holds tens of thousands of them and none holds a cycle."""

    entry_type: str | None = None
    id: Any = None
    probe: Any = None
    intent: Any = None
    goal: Any = None
    prompt: Any = None
    detector_results: dict[str, tuple[float | None, ...]] | None = None
    detector: Any = None
    kind: Any = None
    key: Any = None
    tp: Any = None
    fn: Any = None
    tn: Any = None
    fp: Any = None
    confidence_correction: _CorrectionRecord | None = None
    interval_correction: _CorrectionRecord | None = None


_DECODER = msgspec.json.Decoder(_Row)
# Bytes of lines decoded at once: their rows are counted into arrays, then dropped.
CHUNK_BYTES = 8 << 20
_ROW_INDEX = re.compile(r"\$\[(\d+)\]")
_NO_RESULTS: dict[str, tuple[float | None, ...]] = {}


@dataclass
class Vocabulary:
    """Probe and intent names → codes, shared by both runs so their codes agree."""

    probes: dict[str, int] = field(default_factory=dict)
    intents: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def codes(table: dict[str, int], values: list[Any], default: str) -> np.ndarray:
        """The codes of the rows' values, named as `_name` names them (a new name gets the
        next code). A report's probes and intents are strings or None, so only their few
        distinct values are named."""
        try:
            distinct = dict.fromkeys(values)
        except TypeError:  # a list or object where a name belongs
            distinct = {0j: None}
        if not all(type(v) is str or v is None for v in distinct):
            values = [_name(v, default) for v in values]
            distinct = dict.fromkeys(values)
        local = {}
        for value in distinct:
            local[value] = table.setdefault(_name(value, default), len(table))
        return np.fromiter(map(local.__getitem__, values), np.int64, len(values))


@dataclass
class RunCounts:
    """A run by attempt: its probe and intent codes, pairing keys, and per detector the
    failing and scored outputs of each attempt."""

    label: str
    header: dict[str, Any]
    probe_of: np.ndarray
    intent_of: np.ndarray
    id_keys: np.ndarray
    text_keys: np.ndarray
    detectors: dict[str, tuple[np.ndarray, np.ndarray]]
    present: dict[str, np.ndarray]
    corrections: dict[str, Correction | None]
    vocabulary: Vocabulary

    @property
    def attempts(self) -> int:
        return int(self.probe_of.size)


def _name(value: Any, default: str) -> str:
    return value if type(value) is str else default if value is None else str(value)


class _RunReader:
    """Counts a report's rows into a RunCounts, a chunk of decoded rows at a time."""

    def __init__(self, label: str, vocabulary: Vocabulary) -> None:
        self.label = label
        self.vocabulary = vocabulary
        self.header: dict[str, Any] | None = None
        self.test: Any = None
        self.attempts = 0
        self.columns: dict[str, list[np.ndarray]] = {
            "probe": [],
            "intent": [],
            "id": [],
            "text": [],
        }
        # detector -> [(first attempt, attempts, failing, scored)] per chunk
        self.counts: dict[str, list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]] = {}
        self.eval_corrections: dict[str, _CorrectionRecord] = {}
        self.audit_counts: dict[str, tuple[int, int, int, int]] = {}
        self._audit_key: str | None = None

    def set_header(self, header: dict[str, Any]) -> None:
        if self.header is None:
            self.header = header
            self.test = _failing_test(header)

    def add_chunk(self, rows: list[_Row]) -> None:
        attempts = [r for r in rows if r.entry_type == "attempt"]
        if len(attempts) < len(rows):
            for row in rows:
                if row.entry_type == "eval":
                    self._eval(row)
                elif row.entry_type == "audit":
                    self._audit(row)
        if attempts:
            self._attempts(attempts)

    def _attempts(self, rows: list[_Row]) -> None:
        vocab = self.vocabulary
        probes = Vocabulary.codes(vocab.probes, [r.probe for r in rows], "default")
        self.columns["probe"].append(probes)
        codes = Vocabulary.codes(vocab.intents, [r.intent for r in rows], "")
        self.columns["intent"].append(np.where(codes == vocab.intents.get(""), -1, codes))
        self.columns["id"].append(_id_keys(probes, [r.id for r in rows]))
        texts = zip([r.prompt for r in rows], [r.goal for r in rows], strict=True)
        self.columns["text"].append(_text_keys(probes, list(texts)))
        self._scores([r.detector_results or _NO_RESULTS for r in rows])
        self.attempts += len(rows)

    def _scores(self, results: list[dict[str, tuple[float | None, ...]]]) -> None:
        """Every score of the chunk in one flat array, counted per (attempt, detector) list:
        failing outputs and scored outputs (None scores are neither), kept per detector with
        the attempts it looked at."""
        lists = list(chain.from_iterable(map(dict.values, results)))
        if not lists:
            return
        per_attempt = np.fromiter(map(len, results), np.int64, len(results))
        owner = np.repeat(np.arange(len(results), dtype=np.int32), per_attempt)
        sizes = np.fromiter(map(len, lists), np.int64, len(lists))
        failing, scored = self._count(np.array(list(chain.from_iterable(lists)), np.float64), sizes)
        for name, mine in _lists_by_name(list(chain.from_iterable(results))):
            entry = (self.attempts, owner[mine], failing[mine], scored[mine])
            self.counts.setdefault(name, []).append(entry)

    def _count(self, scores: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(failing, scored) outputs of each list of scores (NaN, from None, is unscored)."""
        owner = np.repeat(np.arange(sizes.size), sizes)
        ok = ~np.isnan(scores)
        bad = np.zeros(scores.shape, dtype=bool)
        bad[ok] = self.test(scores[ok])
        return (
            np.bincount(owner, weights=bad, minlength=sizes.size).astype(np.int32),
            np.bincount(owner, weights=ok, minlength=sizes.size).astype(np.int32),
        )

    def _eval(self, row: _Row) -> None:
        record = row.confidence_correction or row.interval_correction
        if record is None or record.se is None or record.sp is None:
            return
        if isinstance(row.detector, str):
            self.eval_corrections.setdefault(row.detector, record)

    def _audit(self, row: _Row) -> None:
        if row.kind == "summary":
            self._audit_key = str(row.key)
        elif row.kind in ("panel", "detector") and self._audit_key is not None:
            counts = (row.tp, row.fn, row.tn, row.fp)
            if all(isinstance(c, int) for c in counts):
                self.audit_counts[self._audit_key] = counts

    def finish(self) -> RunCounts:
        if self.header is None:
            raise CompareError(f"{self.label}: not a redjury report (no init row)")
        per_attempt = {name: self._per_attempt(name) for name in sorted(self.counts)}
        detectors = {name: (f, m) for name, (f, m, _) in per_attempt.items()}
        column = {k: _joined(v) for k, v in self.columns.items()}
        return RunCounts(
            label=self.label,
            header=self.header,
            probe_of=column["probe"],
            intent_of=column["intent"],
            id_keys=column["id"],
            text_keys=column["text"],
            detectors=detectors,
            present={name: p for name, (_, _, p) in per_attempt.items()},
            corrections={name: self._correction(name) for name in detectors},
            vocabulary=self.vocabulary,
        )

    def _per_attempt(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(failing, scored) outputs per attempt of the whole run (None scores are neither),
        and whether the detector looked at the attempt at all."""
        fails = np.zeros(self.attempts, dtype=np.int32)
        scored = np.zeros(self.attempts, dtype=np.int32)
        present = np.zeros(self.attempts, dtype=bool)
        for first, at, f, m in self.counts.pop(name):
            fails[first + at] = f
            scored[first + at] = m
            present[first + at] = True
        return fails, scored, present

    def _correction(self, detector: str) -> Correction | None:
        record = self.eval_corrections.get(detector)
        if record is None:
            return None
        source = record.source or "config"
        counts = self.audit_counts.get(source.removeprefix("audit:"))
        if counts is not None and source.startswith("audit:"):
            tp, fn, tn, fp = counts
            try:
                return Correction.from_counts(tp, fn, tn, fp, source)
            except ValueError:
                pass
        assert record.se is not None and record.sp is not None  # as `_eval` keeps them
        return Correction(record.se, record.sp, source)


def _lists_by_name(names: list[str]) -> list[tuple[str, Any]]:
    """(detector, which of the chunk's score lists are its) for each detector named."""
    distinct = list(dict.fromkeys(names))
    if len(distinct) == 1:
        return [(distinct[0], slice(None))]
    table = {name: code for code, name in enumerate(distinct)}
    codes = np.fromiter(map(table.__getitem__, names), np.int64, len(names))
    return [(name, codes == code) for name, code in table.items()]


# Pairing keys: the hash of an attempt's id (or prompt and goal) mixed with its probe's code
# (the vocabulary both runs share), so the same id in two probes is two attempts.
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _with_probe(hashes: np.ndarray, probes: np.ndarray) -> np.ndarray:
    mixed = hashes.view(np.uint64) ^ ((probes.astype(np.uint64) + np.uint64(1)) * _MIX)
    return mixed.view(np.int64)


def _text_keys(probes: np.ndarray, texts: list[tuple[Any, Any]]) -> np.ndarray:
    """Per attempt the key of its probe, prompt and goal; a prompt or goal that is a JSON
    object or array is hashed as its canonical JSON."""
    try:
        hashes = np.fromiter(map(hash, texts), np.int64, len(texts))
    except TypeError:
        keys = [(_hashable(prompt), _hashable(goal)) for prompt, goal in texts]
        hashes = np.fromiter(map(hash, keys), np.int64, len(keys))
    return _with_probe(hashes, probes)


def _hashable(value: Any) -> Any:
    if isinstance(value, dict | list):
        return ("json", msgspec.json.encode(value, order="sorted"))
    return value


def _id_keys(probes: np.ndarray, ids: list[Any]) -> np.ndarray:
    """Per attempt the key of its probe and id (as text), 0 where it has no id."""
    keys = _with_probe(np.fromiter(map(hash, map(str, ids)), np.int64, len(ids)), probes)
    if None in ids:
        keys[np.fromiter((i is None for i in ids), bool, len(ids))] = 0
    return keys


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while rows are decoded and counted: the rows hold no
    cycle, and a collection every few hundred allocations would rescan every row still held
    (it more than doubles the time of a large report)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def _failing_test(header: dict[str, Any]) -> Any:
    """A vectorised `score fails` under the run's verdict policy (the report's init row)."""
    from redjury.evaluators import failing_scores

    return failing_scores(evaluator_of(header))


RunLike = Any  # a run folder, a report path, a `Results`, or report rows


def read_run(source: RunLike, vocabulary: Vocabulary, label: str | None = None) -> RunCounts:
    """A run's counts from a run folder or report file, a `Results` or its report rows."""
    out_dir = getattr(source, "out_dir", None)
    if out_dir is not None:
        source = Path(out_dir)
    if isinstance(source, str | Path):
        return _read_file(Path(source), vocabulary, label)
    rows = getattr(source, "rows", source)
    if not isinstance(rows, Iterable):
        raise CompareError(
            f"cannot compare a {type(source).__name__}: give a run folder, a report path, "
            "a Results or its rows"
        )
    reader = _RunReader(label or "run", vocabulary)
    lines = (msgspec.json.encode(row) + b"\n" for row in rows)
    blocks = iter(lambda: b"".join(islice(lines, 4096)), b"")
    with _collector_paused():
        _read_blocks(blocks, reader, label or "run")
    return reader.finish()


def _read_file(path: Path, vocabulary: Vocabulary, label: str | None) -> RunCounts:
    try:
        report = report_path_of(path)
    except ValueError as exc:
        raise CompareError(str(exc)) from None
    reader = _RunReader(label or str(path), vocabulary)
    try:
        with report.open("rb") as fh, _collector_paused():
            _read_blocks(_whole_lines(fh), reader, str(report))
    except OSError as exc:
        raise CompareError(f"{report}: {exc.strerror or exc}") from None
    return reader.finish()


def _whole_lines(fh: BinaryIO) -> Iterator[bytes]:
    """The file in blocks of about CHUNK_BYTES, each ending at a line's end; a last line with
    no newline (a writer killed mid-line) is left out."""
    rest = b""
    for block in iter(lambda: fh.read(CHUNK_BYTES), b""):
        end = block.rfind(b"\n") + 1
        if end == 0:
            rest += block
            continue
        yield rest + block[:end]
        rest = block[end:]


def _read_blocks(blocks: Iterable[bytes], reader: _RunReader, where: str) -> None:
    """Decode and count each block of whole lines; a row that is not a report row is named by
    its line."""
    first_line = 1
    for block in blocks:
        if reader.header is None:
            _read_header(block[: block.find(b"\n")], reader, where, first_line)
        try:
            rows = _DECODER.decode_lines(block)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise CompareError(_located(exc, where, first_line, block)) from None
        reader.add_chunk(rows)
        del rows
        first_line += block.count(b"\n")


def _read_header(line: bytes, reader: _RunReader, where: str, number: int) -> None:
    import orjson

    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        row = None
    if not isinstance(row, dict) or row.get("entry_type") != "init":
        raise CompareError(f"{where}:{number}: not a redjury report (no init row first)")
    reader.set_header(row)


def _located(exc: Exception, where: str, first_line: int, block: bytes) -> str:
    """The error of a block as `file:line: what`, the line found from the error's row index
    (validation; blank lines hold no row) or by decoding the lines one by one (broken JSON)."""
    lines = block.split(b"\n")
    what, _, at = str(exc).partition(" - at `")
    found = _ROW_INDEX.match(at)
    if found is not None:
        path = at[found.end() :].strip("`.") or "row"
        rows = (i for i, text in enumerate(lines) if text.strip())
        number = first_line + next(islice(rows, int(found.group(1)), None), 0)
        return f"{where}:{number}: field {path}: {what}"
    for i, line in enumerate(lines):
        try:
            _DECODER.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as one:
            return f"{where}:{first_line + i}: not a report row: {one}"
    return f"{where}: {exc}"


# -- the instruments: what decides a verdict must be the same in both runs ---------------------
_JUDGE_FIELDS = ("name", "connection.type", "connection.deployment", "generation", "options")
_EVALUATION_FIELDS = ("aggregation", "threshold", "require_all_judges")


def _dig(value: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def instruments(header: Mapping[str, Any]) -> dict[str, Any]:
    """What measured a run, by key path: the verdict policy, the detectors' settings and each
    judge's model, connection type, generation settings, options and scoring (never its URL,
    headers or key), and how the panel aggregates."""
    config = header.get("config") or {}
    evaluation = config.get("evaluation") or {}
    out: dict[str, Any] = {
        "evaluator": header.get("evaluator") or {"type": "threshold", "threshold": 0.5},
        "detectors": config.get("detectors"),
        "schema_dir": config.get("schema_dir"),
    }
    judges = evaluation.get("judges") or []
    out["evaluation.judges"] = len(judges)
    for i, judge in enumerate(judges):
        for name in _JUDGE_FIELDS:
            out[f"evaluation.judges[{i}].{name}"] = _dig(judge, name)
        scoring = dict(judge.get("scoring") or {}) if isinstance(judge, Mapping) else {}
        for name, value in sorted(scoring.items()):
            out[f"evaluation.judges[{i}].scoring.{name}"] = value
    if judges:
        for name in _EVALUATION_FIELDS:
            out[f"evaluation.{name}"] = evaluation.get(name)
    return out


def instrument_differences(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """`path: BASE value vs NEW value` for every instrument that differs."""
    a, b = instruments(base), instruments(new)
    return [
        f"{key}: {_short(a.get(key))} vs {_short(b.get(key))}"
        for key in sorted(set(a) | set(b))
        if a.get(key) != b.get(key)
    ]


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- pairing ------------------------------------------------------------------------------------
def _once(keys: np.ndarray, usable: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The keys that occur once (among the usable), sorted, and where they are."""
    at = np.arange(keys.size) if usable is None else np.flatnonzero(usable)
    order = at[np.argsort(keys[at])]
    ordered = keys[order]
    single = np.ones(ordered.size, dtype=bool)
    repeated = ordered[1:] == ordered[:-1]
    single[1:] &= ~repeated
    single[:-1] &= ~repeated
    return ordered[single], order[single]


def _common(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Where the keys both sorted unique key lists hold are, in each run, in the base run's
    order (so sums over the pairs do not depend on the keys' hashes)."""
    (keys_a, at_a), (keys_b, at_b) = a, b
    if not (keys_a.size and keys_b.size):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    pos = np.minimum(np.searchsorted(keys_b, keys_a), keys_b.size - 1)
    hit = keys_b[pos] == keys_a
    partner = np.full(int(at_a.max()) + 1, -1, dtype=np.int64)
    partner[at_a[hit]] = at_b[pos[hit]]
    paired = np.flatnonzero(partner >= 0)
    return paired, partner[paired]


def pair_attempts(base: RunCounts, new: RunCounts) -> tuple[np.ndarray, np.ndarray, str]:
    """(base indices, new indices, "id" | "prompt_goal" | "none"): attempts with the same id
    (within a probe) in both runs, else the same prompt and goal; keys that repeat inside a
    run pair nothing."""
    ia, ib = _common(_once(base.id_keys, base.id_keys != 0), _once(new.id_keys, new.id_keys != 0))
    if ia.size:
        return ia, ib, "id"
    ia, ib = _common(_once(base.text_keys), _once(new.text_keys))
    if ia.size:
        return ia, ib, "prompt_goal"
    empty = np.zeros(0, dtype=np.int64)
    return empty, empty, "none"


# -- counting by group --------------------------------------------------------------------------
@dataclass
class _Sums:
    """One run × detector × scope: per group Σ fails, Σ scored, attempts, Σe², and per attempt
    its residual eᵢ (what the pairs correlate)."""

    fails: np.ndarray
    outputs: np.ndarray
    attempts: np.ndarray
    squares: np.ndarray
    residual: np.ndarray
    looked: np.ndarray  # per group: attempts the detector looked at, scored or not


def _sums(run: RunCounts, detector: str, group: np.ndarray, size: int) -> _Sums:
    fails, scored = run.detectors.get(detector) or (np.zeros(run.attempts), np.zeros(run.attempts))
    keep = group >= 0
    every = bool(keep.all())
    g, y, m = (group, fails, scored) if every else (group[keep], fails[keep], scored[keep])
    fails_sum = np.bincount(g, weights=y, minlength=size)
    outputs = np.bincount(g, weights=m, minlength=size)
    attempts = np.bincount(g, weights=m > 0, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(outputs > 0, fails_sum / np.maximum(outputs, 1.0), 0.0)
    kept_residual = y - rate[g] * m
    squares = np.bincount(g, weights=kept_residual**2, minlength=size)
    residual = kept_residual
    if not every:
        residual = np.zeros(run.attempts)
        residual[keep] = kept_residual
    present = run.present.get(detector)
    looked = (
        np.zeros(size)
        if present is None
        else np.bincount(g, weights=present if every else present[keep], minlength=size)
    )
    return _Sums(fails_sum, outputs, attempts, squares, residual, looked)


@dataclass
class _Pairs:
    """The paired attempts (base indices, new indices) and, per scope, which pairs share a
    group (and which group), found once for every detector."""

    base: np.ndarray
    new: np.ndarray
    scopes: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def of_scope(
        self, scope: str, groups: tuple[np.ndarray, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        if scope not in self.scopes:
            gb, gn = groups[0][self.base], groups[1][self.new]
            same = (gb >= 0) & (gb == gn)
            self.scopes[scope] = same, gb
        return self.scopes[scope]


def _cross(
    base: _Sums,
    new: _Sums,
    pairs: _Pairs,
    both_scored: np.ndarray,
    scope: tuple[np.ndarray, np.ndarray],
    size: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per group: Σ e_base·e_new over the pairs scored in both runs, and how many there are."""
    same, gb = scope
    use = same & both_scored
    products = base.residual[pairs.base[use]] * new.residual[pairs.new[use]]
    return (
        np.bincount(gb[use], weights=products, minlength=size),
        np.bincount(gb[use], minlength=size),
    )


def _scopes(base: RunCounts, new: RunCounts) -> list[tuple[str, list[str], np.ndarray, np.ndarray]]:
    """(scope, group names, base groups, new groups) for probes, intents and the whole run."""
    vocabulary = base.vocabulary
    return [
        ("probe", list(vocabulary.probes), base.probe_of, new.probe_of),
        ("intent", list(vocabulary.intents), base.intent_of, new.intent_of),
        ("overall", [""], np.zeros(base.attempts, np.int64), np.zeros(new.attempts, np.int64)),
    ]


@dataclass
class _Cells:
    """The comparisons to make, one entry per row, gathered before the statistics run once."""

    labels: list[tuple[str, str, str]] = field(default_factory=list)  # scope, name, detector
    columns: dict[str, list[float]] = field(default_factory=dict)

    def add(self, label: tuple[str, str, str], **values: float) -> None:
        self.labels.append(label)
        for key, value in values.items():
            self.columns.setdefault(key, []).append(float(value))

    def array(self, key: str) -> np.ndarray:
        return np.array(self.columns.get(key, []), dtype=np.float64)


def gather_cells(base: RunCounts, new: RunCounts, pairs: _Pairs | None = None) -> _Cells:
    """Every probe × detector, intent × detector and detector overall either run has (scored
    or not: a pair neither run could score is a `not_compared` row, as its eval rows say SKIP)."""
    cells = _Cells()
    if pairs is None:
        pairs = _Pairs(*pair_attempts(base, new)[:2])
    scopes = _scopes(base, new)
    for detector in sorted(set(base.detectors) | set(new.detectors)):
        both_scored = _scored(base, detector)[pairs.base] & _scored(new, detector)[pairs.new]
        for scope, names, gb, gn in scopes:
            size = len(names)
            b, w = _sums(base, detector, gb, size), _sums(new, detector, gn, size)
            cross, paired = _cross(b, w, pairs, both_scored, pairs.of_scope(scope, (gb, gn)), size)
            for i, name in enumerate(names):
                if b.looked[i] or w.looked[i]:
                    cells.add(
                        (scope, name, detector),
                        base_fails=b.fails[i], base_outputs=b.outputs[i],
                        base_attempts=b.attempts[i], base_squares=b.squares[i],
                        new_fails=w.fails[i], new_outputs=w.outputs[i],
                        new_attempts=w.attempts[i], new_squares=w.squares[i],
                        cross=cross[i], pairs=paired[i],
                    )  # fmt: skip
    return cells


def _scored(run: RunCounts, detector: str) -> np.ndarray:
    counts = run.detectors.get(detector)
    return counts[1] > 0 if counts is not None else np.zeros(run.attempts, dtype=bool)


# -- the rows -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CompareSettings:
    """How two runs are compared: the interval's level, the adjustment across the table, the
    smallest change that counts, and whether runs judged differently may be compared."""

    margin: float = 0.0
    adjust: str = "holm"
    confidence: float = 0.95
    allow_different_judges: bool = False

    def __post_init__(self) -> None:
        if self.adjust not in ("holm", "bh"):
            raise CompareError(f"--adjust must be holm or bh, got {self.adjust!r}")
        if not 0.0 < self.confidence < 1.0:
            raise CompareError(f"--confidence must be in (0, 1), got {self.confidence!r}")
        if not 0.0 <= self.margin < 1.0:
            raise CompareError(f"--margin must be in [0, 1), got {self.margin!r}")


def _same_correction(a: Correction | None, b: Correction | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.se, a.sp, a.se_counts, a.sp_counts) == (b.se, b.sp, b.se_counts, b.sp_counts)


def _rate_fields(
    rate: float, n_eff: float, correction: Correction | None, level: float
) -> tuple[float, float, float]:
    """A run's ASR and interval as a single run gives them: Wilson over the attempts' effective
    size, carried through the detector's Se/Sp with the audit's uncertainty."""
    from redjury.stats.intervals import corrected_bounds, rogan_gladen, wilson_interval

    raw = wilson_interval(rate * n_eff, n_eff, level)
    lo, hi = corrected_bounds(float(raw[0]), float(raw[1]), correction, level, True)
    if correction is not None:
        rate = float(rogan_gladen(rate, correction.se, correction.sp))
    return rate, lo, hi


def comparison_rows(
    base: RunCounts, new: RunCounts, settings: CompareSettings | None = None
) -> list[dict[str, Any]]:
    """One `comparison` row per probe × detector, intent × detector and detector overall."""
    settings = settings or CompareSettings()
    differences = instrument_differences(base.header, new.header)
    if differences and not settings.allow_different_judges:
        raise CompareError(
            f"{base.label} and {new.label} were judged differently, so their rates measure "
            f"different things ({'; '.join(differences)}); --allow-different-judges compares "
            "them anyway and marks every row"
        )
    paired_base, paired_new, pairing = pair_attempts(base, new)
    cells = gather_cells(base, new, _Pairs(paired_base, paired_new))
    rows = [
        _row(cells, i, base, new, settings, pairing, bool(differences))
        for i in range(len(cells.labels))
    ]
    _add_differences(rows, cells, base, new, settings)
    return rows


def _row(
    cells: _Cells,
    i: int,
    base: RunCounts,
    new: RunCounts,
    settings: CompareSettings,
    pairing: str,
    different_judges: bool,
) -> dict[str, Any]:
    scope, name, detector = cells.labels[i]
    col = {key: values[i] for key, values in cells.columns.items()}
    row: dict[str, Any] = {
        "entry_type": "comparison",
        "scope": scope,
        "probe": name if scope == "probe" else None,
        "intent": name if scope == "intent" else None,
        "detector": detector,
    }
    for side, run in (("base", base), ("new", new)):
        correction = run.corrections.get(detector)
        outputs = col[f"{side}_outputs"]
        asr = lower = upper = None
        if outputs:
            from redjury.stats.compare import rate_from_sums

            rate = rate_from_sums(
                col[f"{side}_fails"], outputs, col[f"{side}_attempts"], col[f"{side}_squares"]
            )
            asr, lower, upper = _rate_fields(
                float(rate.rate), float(rate.n_eff), correction, settings.confidence
            )
        row[f"{side}_asr"], row[f"{side}_lower"], row[f"{side}_upper"] = asr, lower, upper
        row[f"{side}_fails"] = int(col[f"{side}_fails"])
        row[f"{side}_outputs"] = int(outputs)
        row[f"{side}_attempts"] = int(col[f"{side}_attempts"])
    pairs = int(col["pairs"])
    row.update(
        paired=pairs > 0,
        pairs=pairs,
        pairing=pairing if pairs else "none",
        confidence=settings.confidence,
        correction=_correction_record(base.corrections.get(detector)),
        different_judges=different_judges,
    )
    return row


def _correction_record(correction: Correction | None) -> dict[str, Any] | None:
    if correction is None:
        return None
    return {"se": correction.se, "sp": correction.sp, "source": correction.source}


def _add_differences(
    rows: list[dict[str, Any]],
    cells: _Cells,
    base: RunCounts,
    new: RunCounts,
    settings: CompareSettings,
) -> None:
    """NEW − BASE for every row at once: interval, p-value, adjusted p-value and verdict."""
    from redjury.stats.compare import (
        adjust_p_values,
        correction_factor_bounds,
        correlation_from_sums,
        difference_of_rates,
        rate_from_sums,
        verdicts,
    )

    comparable = (cells.array("base_outputs") > 0) & (cells.array("new_outputs") > 0)
    b, w = (
        rate_from_sums(*(np.where(comparable, cells.array(f"{side}_{k}"), 1.0) for k in
                         ("fails", "outputs", "attempts", "squares")))
        for side in ("base", "new")
    )  # fmt: skip
    phi = correlation_from_sums(cells.array("cross"), b.sum_squares, w.sum_squares)
    ends = [
        correction_factor_bounds(base.corrections.get(det), settings.confidence)
        for _, _, det in cells.labels
    ]
    j_bounds = (np.array([e[0] for e in ends]), np.array([e[1] for e in ends]))
    found = difference_of_rates(b, w, phi, j_bounds, settings.confidence)
    p_values = np.where(comparable, found.p_value, np.nan)
    adjusted = adjust_p_values(p_values, settings.adjust)
    for i, row in enumerate(rows):
        if not comparable[i]:
            unscored = [side for side in ("BASE", "NEW") if not row[f"{side.lower()}_outputs"]]
            row.update(difference=None, difference_lower=None, difference_upper=None)
            row["note"] = f"nothing scored in {' or '.join(unscored)}"
            continue
        _difference_fields(row, float(found.lower[i]), float(found.upper[i]), base, new)
    named = verdicts(
        [r["difference"] if r["difference"] is not None else 0.0 for r in rows],
        adjusted,
        1.0 - settings.confidence,
        settings.margin,
    )
    for i, row in enumerate(rows):
        row["p_value"] = None if np.isnan(p_values[i]) else float(p_values[i])
        row["p_adjusted"] = None if np.isnan(adjusted[i]) else float(adjusted[i])
        row["adjust"] = settings.adjust
        row["margin"] = settings.margin
        row["verdict"] = named[i] if comparable[i] else "not_compared"
        if (
            row.get("correction_differs")
            and row["difference_lower"] <= 0 <= row["difference_upper"]
        ):
            # The p-value tests the raw rates; with two corrections only the interval speaks.
            row["verdict"] = "no_change"


def _difference_fields(
    row: dict[str, Any], lower: float, upper: float, base: RunCounts, new: RunCounts
) -> None:
    """The difference of the two ASRs shown; where the runs' Se/Sp differ, the interval is
    recovered from the two corrected intervals instead (MOVER), which is wider."""
    difference = row["new_asr"] - row["base_asr"]
    detector = row["detector"]
    if not _same_correction(base.corrections.get(detector), new.corrections.get(detector)):
        lower = difference - float(
            np.hypot(row["new_asr"] - row["new_lower"], row["base_upper"] - row["base_asr"])
        )
        upper = difference + float(
            np.hypot(row["new_upper"] - row["new_asr"], row["base_asr"] - row["base_lower"])
        )
        row["correction_differs"] = True
    # Clipping a corrected rate at 0 or 1 can move the difference of the shown ASRs past the
    # interval of the unclipped one; the interval is widened to hold it.
    row["difference"] = difference
    row["difference_lower"] = max(-1.0, min(lower, difference))
    row["difference_upper"] = min(1.0, max(upper, difference))
