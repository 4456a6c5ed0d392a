"""The rows the Python API returns, as types: report rows, hitlog rows, comparison rows.

Each is a `TypedDict` of the JSONL row it describes (the same dicts, read from the same
files), so a type checker knows `row["fails"]` is an int. Keys a row carries only in some
runs are optional (`NotRequired`): a judge panel's `abstention_rate`, an interval's fields,
a calibration's `z_score`. Nested values whose shape is a detector's own (`details`) stay
`Any`. New keys may be added to a row; none is taken away without a changelog entry.
"""

from typing import Any, Literal, NotRequired, TypedDict

# Per detector, one value per output of the attempt.
PerOutput = dict[str, list[Any]]


class InitRow(TypedDict):
    """The run's header (`entry_type: init`): what was run, how, and under which config."""

    entry_type: Literal["init"]
    redjury_version: str
    run_id: str
    start_time: str
    inputs: list[str]
    config_path: str | None
    config: dict[str, Any]
    config_fingerprint: str
    # The settings the fingerprint hashes, secrets masked (absent in older reports).
    decisive_config: NotRequired[dict[str, Any]]
    inputs_fingerprint: str
    seed: int
    detectors: list[str]
    evaluator: dict[str, Any]
    python: str
    stored_state: NotRequired[list[dict[str, Any]] | None]
    upstream_files: NotRequired[dict[str, Any]]


class AttemptRow(TypedDict):
    """One judged attempt: its recorded fields, each detector's scores and verdict labels
    per output, and (redacted) evidence and reasons where a detector gave any."""

    entry_type: Literal["attempt"]
    status: int
    id: str
    probe: str
    content_hash: str
    # Scores per output: 1.0 the attack worked, 0.0 it held, None not scored.
    detector_results: dict[str, list[float | None]]
    # Labels per output (HELD, BROKE_THROUGH, PASSED, FAILED, INCONCLUSIVE).
    verdicts: dict[str, list[str]]
    prompt: NotRequired[str | None]
    outputs: NotRequired[list[str | None]]
    messages: NotRequired[list[dict[str, Any]]]
    intent: NotRequired[str]
    hazard: NotRequired[str]
    goal: NotRequired[str]
    goal_context: NotRequired[str]
    context: NotRequired[Any]
    source: NotRequired[str]
    expected: NotRequired[Any]
    latency_ms: NotRequired[float]
    usage: NotRequired[dict[str, Any]]
    notes: NotRequired[dict[str, Any]]
    run_id: NotRequired[str]
    seq: NotRequired[int]
    generator: NotRequired[str]
    source_record: NotRequired[dict[str, Any]]
    evidence: NotRequired[dict[str, list[list[str]]]]
    reasons: NotRequired[dict[str, list[str | None]]]
    details: NotRequired[PerOutput]


class HitAtK(TypedDict):
    """One k of an eval row's `hit_at_k`: the share of prompts with a hit among their first
    k outputs (averaged over orderings), over the prompts with at least k outputs."""

    score: float
    prompts: int


class EvalRow(TypedDict):
    """One probe × detector, garak's eval row: counts, and redjury's interval fields.

    `passed` / `fails` / `nones` count outputs under `redjury.evaluators.output_failed`;
    the attack-success rate is `fails / total_evaluated`. The interval is in the
    `confidence_*` fields from `bootstrap_min_sample_size` evaluated outputs on, in the
    `interval_*` fields (Clopper–Pearson) below it.
    """

    entry_type: Literal["eval"]
    probe: str
    detector: str
    passed: int
    fails: int
    nones: int
    total_evaluated: int
    total_processed: int
    errors: NotRequired[int]
    intents: NotRequired[dict[str, dict[str, int]]]
    graded_scores: NotRequired[list[dict[str, Any]]]
    counting: NotRequired[dict[str, Any]]
    abstention_rate: NotRequired[float]
    flippable: NotRequired[int]
    confidence_method: NotRequired[str]
    confidence: NotRequired[float]
    confidence_lower: NotRequired[float]
    confidence_upper: NotRequired[float]
    confidence_correction: NotRequired[dict[str, Any]]
    corrected_rate: NotRequired[float]
    interval_method: NotRequired[str]
    interval_level: NotRequired[float]
    interval_lower: NotRequired[float]
    interval_upper: NotRequired[float]
    interval_correction: NotRequired[dict[str, Any] | None]
    # Keyed by k ("1", "2", …) and by the k = n bucket ("n", or n itself when all share it).
    hit_at_k: NotRequired[dict[str, HitAtK]]
    z_score: NotRequired[float]
    defcon: NotRequired[int]
    defcon_symbol: NotRequired[str]
    upstream_files: NotRequired[dict[str, Any]]


class ProbeSummaryRow(TypedDict):
    """One probe: its outputs (`inference_counts`) and its detectors' summed counts."""

    entry_type: Literal["probe_summary"]
    probe: str
    inference_counts: dict[str, int]
    detection_counts: dict[str, Any]


class CompletionRow(TypedDict):
    """The run's last row: when it ended, how many attempts, what the judges cost."""

    entry_type: Literal["completion"]
    end_time: str
    run_id: str | None
    attempts: int
    attempts_resumed: NotRequired[int]
    input_errors: NotRequired[int]
    workers: NotRequired[int]
    judge_cache: NotRequired[dict[str, int]]
    judges_failed: NotRequired[list[str]]
    # A run the judge audit's gate stopped: why (nothing was judged).
    stopped: NotRequired[str]


class InputErrorRow(TypedDict):
    """A bad input line skipped with `skip_bad_lines`: where, which field, why."""

    entry_type: Literal["input_error"]
    file: str
    line: int
    field: str
    reason: str
    where: NotRequired[str]


class HitlogRow(TypedDict):
    """One failing output, in garak's hitlog shape."""

    attempt_id: str
    attempt_seq: int | None
    attempt_idx: int
    run_id: str | None
    goal: str | None
    prompt: dict[str, Any] | None
    output: Any
    triggers: Any
    score: float
    generator: str | None
    probe: str
    detector: str
    generations_per_prompt: int | None


class ComparisonRow(TypedDict):
    """NEW − BASE for one probe × detector, intent × detector or detector overall."""

    entry_type: Literal["comparison"]
    scope: str
    probe: str | None
    intent: str | None
    detector: str
    base_asr: float | None
    base_lower: float | None
    base_upper: float | None
    base_fails: int
    base_outputs: int
    base_attempts: int
    new_asr: float | None
    new_lower: float | None
    new_upper: float | None
    new_fails: int
    new_outputs: int
    new_attempts: int
    paired: bool
    pairs: int
    pairing: str
    confidence: float
    correction: dict[str, Any] | None
    different_judges: bool
    difference: float | None
    difference_lower: float | None
    difference_upper: float | None
    p_value: float | None
    p_adjusted: float | None
    adjust: str
    margin: float
    # regression, improvement, no_change or not_compared.
    verdict: str
    note: NotRequired[str]


# Rows of other kinds (digest, audit, audit_gate) keep their documented shapes as dicts.
ReportRow = (
    InitRow | AttemptRow | EvalRow | ProbeSummaryRow | CompletionRow | InputErrorRow
) | dict[str, Any]
