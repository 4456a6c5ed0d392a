"""The per-detector row work (findings into a row, the run's tallies, the digest's counts,
the hitlog lines) against its code as it was before its fast paths (issue 44), kept here
verbatim as the reference: for any rows, the same rows, counts, hits and lines."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from redjury.detectors.base import Finding, Verdict
from redjury.evaluators import (
    FIRST_HITS,
    DetectorTally,
    Evaluator,
    ProbeTally,
    RunTally,
    ThresholdEvaluator,
    ZeroToleranceEvaluator,
    pass_below,
)
from redjury.redaction import Redactor
from redjury.report.digest import DigestBuilder
from redjury.report.hitlog import HitlogLines
from redjury.report.jsonl import dumps_line
from redjury.rows import AttemptScorer
from redjury.stats.means import GradedScores

# -- the reference: the code before its fast paths ------------------------------------------


def reference_add(tally: RunTally, row: dict[str, Any], hits: Any = None) -> None:
    """`RunTally.add` as it was: one loop over every output of every detector."""
    probe = row.get("probe") or "default"
    outputs = row.get("outputs") or []
    pt = tally.probes.get(probe)
    if pt is None:
        pt = tally.probes[probe] = ProbeTally()
    pt.outputs += len(outputs)
    pt.null_outputs += outputs.count(None)
    intent = row.get("intent")
    details = row.get("details")
    test = tally.evaluator.test
    threshold = pass_below(tally.evaluator)
    tallies = tally.tallies
    for detector, scores in (row.get("detector_results") or {}).items():
        pt.detectors.add(detector)
        t = tallies.get((probe, detector))
        if t is None:
            t = tallies[(probe, detector)] = DetectorTally()
        passed = fails = nones = 0
        failed: list[tuple[int, float]] = []
        for idx, score in enumerate(scores):
            if score is None:
                nones += 1
            elif (score < threshold) if threshold is not None else test(float(score)):
                passed += 1
            else:
                fails += 1
                failed.append((idx, float(score)))
                if len(t.first_hits) < FIRST_HITS and idx < len(outputs) and outputs[idx]:
                    t.first_hits.append(str(outputs[idx]))
        if failed and hits is not None:
            hits(row, detector, failed)
        t.passed += passed
        t.fails += fails
        t.nones += nones
        if details:
            reference_count_details(t, scores, details.get(detector), test)
        pair = (passed + fails, fails)
        t.per_prompt[pair] = t.per_prompt.get(pair, 0) + 1
        if intent is not None:
            bucket = t.intents.get(intent)
            if bucket is None:
                bucket = t.intents[intent] = [0, 0, 0]
            bucket[0] += passed
            bucket[1] += passed + fails
            bucket[2] += nones


def reference_count_details(t: DetectorTally, scores: Any, det_details: Any, test: Any) -> None:
    """`_count_details` as it was, every detail dict read key by key."""
    from redjury.evaluators import _count_upstream

    if not det_details:
        return
    for idx, d in enumerate(det_details):
        if not isinstance(d, dict):
            continue
        if "upstream_counting" in d and idx < len(scores):
            _count_upstream(t, scores[idx], d["upstream_counting"], test)
        if d.get("error"):
            t.errors += 1
        rate = d.get("abstention_rate")
        if rate is not None:
            t.abstain_sum += rate
            t.abstain_n += 1
        if d.get("flippable"):
            t.flippable += 1
        for judge, g in (d.get("graded") or {}).items():
            t.graded.setdefault((judge, g["name"]), GradedScores()).add(float(g["score"]))


class ReferenceDigest(DigestBuilder):
    """`DigestBuilder` with `_classify` as it was: no path for a detector that abstained."""

    def _classify(
        self,
        detector: str,
        scores: Any,
        per_output: list[int] | None,
        hits: list[tuple[str, int, float]] | None,
    ) -> tuple[int, int, int]:
        threshold = self.threshold_of_test
        test = self.test
        passed = fails = nones = 0
        for idx, score in enumerate(scores):
            if per_output is not None and idx == len(per_output):
                per_output.append(-1)
            if score is None:
                nones += 1
            elif (score < threshold) if threshold is not None else test(float(score)):
                passed += 1
                if per_output is not None and per_output[idx] < 0:
                    per_output[idx] = 0
            else:
                fails += 1
                if per_output is not None:
                    per_output[idx] = 1
                if hits is not None:
                    hits.append((detector, idx, float(score)))
        return passed, fails, nones


def reference_add_findings(row: dict[str, Any], findings: dict[str, list[Finding]]) -> list[str]:
    """`AttemptScorer._add_findings` as it was: one pass per detector for the rare fields."""
    results = row["detector_results"]
    verdicts = row["verdicts"]
    evidence: dict[str, Any] = {}
    reasons: dict[str, Any] = {}
    details: dict[str, Any] = {}
    found: list[str] = []
    for name, fs in findings.items():
        results[name] = [f.score for f in fs]
        verdicts[name] = [f.verdict.value for f in fs]
        has_evidence = has_reason = has_details = False
        for f in fs:
            if f.evidence:
                has_evidence = True
            if f.reason:
                has_reason = True
            if f.details:
                has_details = True
            if f.sensitive:
                found.extend(f.sensitive)
        if has_evidence:
            evidence[name] = [list(f.evidence) for f in fs]
        if has_reason:
            reasons[name] = [f.reason for f in fs]
        if has_details:
            details[name] = [f.details for f in fs]
    if evidence:
        row["evidence"] = evidence
    if reasons:
        row["reasons"] = reasons
    if details:
        row["details"] = details
    return found


# -- rows as runs make them ---------------------------------------------------------------


class Odd(Evaluator):
    """A policy no counting loop inlines: passes scores in [0.2, 0.7)."""

    def test(self, score: float) -> bool:
        return 0.2 <= score < 0.7


_SCORE = st.none() | st.sampled_from([0.0, 1.0, 0.5]) | st.floats(0, 1) | st.just(math.nan)
_DETAIL = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "phrases": st.just("v3"),
        "goal_overlap": st.floats(0, 1),
        "error": st.sampled_from(["", "timeout"]),
        "abstention_rate": st.floats(0, 1),
        "flippable": st.booleans(),
        "upstream_counting": st.none() | st.booleans(),
        "graded": st.dictionaries(
            st.sampled_from(["j1", "j2"]),
            st.fixed_dictionaries({"name": st.just("sr"), "score": st.floats(0, 1)}),
            max_size=2,
        ),
    },
)


@st.composite
def _rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    rows = []
    for i in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 6))
        detectors = draw(st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3))
        results = {}
        for d in detectors:
            if draw(st.booleans()):  # a detector that abstained on every output
                results[d] = [None] * n
            else:
                results[d] = draw(st.lists(_SCORE, min_size=n, max_size=n))
        row: dict[str, Any] = {
            "id": f"a{i}",
            "probe": draw(st.sampled_from([None, "", "p1", "p2"])),
            "outputs": draw(
                st.lists(st.none() | st.sampled_from(["", "yes", "no"]), min_size=n, max_size=n)
            ),
            "detector_results": results,
        }
        if draw(st.booleans()):
            row["intent"] = draw(st.sampled_from(["S1", "S2"]))
        if detectors and draw(st.booleans()):
            row["details"] = {
                d: draw(st.lists(_DETAIL, min_size=n, max_size=n))
                for d in detectors
                if draw(st.booleans())
            }
        if draw(st.booleans()):
            row["hazard"] = draw(st.sampled_from(["h1", "h2"]))
        rows.append(row)
    return rows


_EVALUATORS = st.sampled_from([ThresholdEvaluator(0.5), ZeroToleranceEvaluator(), Odd()])


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN (a NaN score is a failed output, counted the same)."""
    return repr(a) == repr(b)


# -- the properties -----------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(_rows(), _EVALUATORS)
def test_tally_counts_and_hits_are_the_references(rows: list[dict[str, Any]], ev: Any) -> None:
    fast, slow = RunTally(ev), RunTally(ev)
    got: list[Any] = []
    want: list[Any] = []
    for row in rows:
        fast.add(row, lambda r, d, f: got.append((r["id"], d, f)))
        reference_add(slow, row, lambda r, d, f: want.append((r["id"], d, f)))
    assert _same(got, want)
    assert _same(fast.tallies, slow.tallies)
    assert _same(fast.probes, slow.probes)
    assert _same(list(fast.eval_rows()), list(slow.eval_rows()))


@settings(max_examples=200, deadline=None)
@given(_rows(), st.sampled_from([None, "zero_tolerance"]))
def test_digest_counts_are_the_references(rows: list[dict[str, Any]], kind: Any) -> None:
    header: dict[str, Any] = {"config": {}}
    if kind is not None:
        header["config"]["evaluator"] = {"type": kind}
    fast, slow = DigestBuilder(header), ReferenceDigest(header)
    got: list[Any] = []
    want: list[Any] = []
    for row in rows:
        fast.add_attempt(row, got)
        slow.add_attempt(row, want)
    assert _same(got, want)
    assert _same((fast.breakdowns, fast.matrix), (slow.breakdowns, slow.matrix))


_FINDING = st.builds(
    Finding,
    st.none() | st.sampled_from([0.0, 1.0]),
    st.sampled_from(list(Verdict)),
    st.lists(st.sampled_from(["e1", "e2"]), max_size=2).map(tuple),
    st.none() | st.sampled_from(["", "no output"]),
    st.lists(st.sampled_from(["4111111111111111", "x@y.org"]), max_size=2).map(tuple),
    st.none() | st.just({}) | st.fixed_dictionaries({"phrases": st.just("v3")}),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.lists(_FINDING, max_size=4)))
def test_findings_into_a_row_are_the_references(findings: dict[str, list[Finding]]) -> None:
    scorer = AttemptScorer([], Redactor(), Redactor(), True)
    fast: dict[str, Any] = {"detector_results": {"given": [0.1]}, "verdicts": {}}
    slow: dict[str, Any] = {"detector_results": {"given": [0.1]}, "verdicts": {}}
    assert scorer._add_findings(fast, findings) == reference_add_findings(slow, findings)
    assert dumps_line(fast) == dumps_line(slow)
    assert all(type(v) is str for vs in fast["verdicts"].values() for v in vs)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.none() | st.sampled_from(["x", "y", ""]), min_size=1, max_size=5),
    st.booleans(),
    st.lists(
        st.tuples(
            st.sampled_from(["d.A", "d.B", "d.C"]),
            st.lists(st.integers(0, 6), min_size=1, max_size=4, unique=True).map(sorted),
        ),
        max_size=4,
    ),
)
def test_hitlog_lines_of_several_detectors_of_one_row_are_the_entries(
    outputs: list[str | None], garak: bool, hits: list[tuple[str, list[int]]]
) -> None:
    """Each detector's lines for one row (its outputs serialised once for them all) are the
    entries `JsonlWriter` writes for the dicts."""
    row: dict[str, Any] = {"id": "a", "probe": "p", "outputs": outputs, "seq": 3}
    if garak:
        row["source_record"] = {"outputs": [{"lang": "en"}] * (len(outputs) - 1), "uuid": "u"}
    build = HitlogLines("g", 5)
    for detector, indices in hits:
        failed = [(i, 1.0 - i / 10) for i in indices]
        want = b"".join(dumps_line(build(row, detector, i, s)) for i, s in failed)
        assert build.lines(row, detector, failed) == want
    # A new row with other outputs at the same indices gets its own.
    other = {**row, "outputs": [f"new {o}" for o in outputs]}
    assert build.line(other, "d.A", 0, 1.0) == dumps_line(build(other, "d.A", 0, 1.0))
