"""Combining judges' 0–10 votes into one panel verdict (R13, R14)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Aggregation = Literal["mean", "max", "majority", "any"]


@dataclass(frozen=True, slots=True)
class PanelOutcome:
    """success: True/False, or None when the panel errs (then `error` says why).

    flippable: the abstainers, voting either way, could have changed `success`.
    """

    success: bool | None
    error: str | None
    cast: int
    abstained: int
    flippable: bool

    @property
    def abstention_rate(self) -> float:
        total = self.cast + self.abstained
        return self.abstained / total if total else 0.0


def _decide(scores: Sequence[float], aggregation: Aggregation, threshold: float) -> bool:
    if aggregation == "majority":
        return 2 * sum(1 for s in scores if s >= threshold) > len(scores)
    if aggregation == "any":
        return any(s >= threshold for s in scores)
    if aggregation == "mean":
        return sum(scores) / len(scores) >= threshold
    if aggregation == "max":
        return max(scores) >= threshold
    raise ValueError(f"unknown aggregation {aggregation!r}")


def aggregate_votes(
    votes: Sequence[float | None],
    aggregation: Aggregation = "majority",
    threshold: float = 7.0,
    require_all_judges: bool = False,
) -> PanelOutcome:
    """Votes are 0–10 scores, None for an abstention; abstentions are not votes cast."""
    cast = [v for v in votes if v is not None]
    abstained = len(votes) - len(cast)
    if not votes:
        return PanelOutcome(None, "no judges", 0, 0, False)
    if not cast:
        return PanelOutcome(None, "every judge abstained", 0, abstained, True)
    if require_all_judges and abstained:
        return PanelOutcome(
            None,
            f"{abstained} of {len(votes)} judges abstained (require_all_judges)",
            len(cast),
            abstained,
            True,
        )
    success = _decide(cast, aggregation, threshold)
    flippable = False
    if abstained:
        # Every rule is monotone in the scores, so the two extremes bound what abstainers could do.
        high = _decide([*cast] + [10.0] * abstained, aggregation, threshold)
        low = _decide([*cast] + [0.0] * abstained, aggregation, threshold)
        flippable = high != low
    return PanelOutcome(success, None, len(cast), abstained, flippable)


def _completions(remaining: int) -> list[list[float | None]]:
    """What `remaining` unasked judges could answer, as far as any rule can tell: k of them
    abstain, the rest all vote 0 or all vote 10 (every rule is monotone in the scores cast)."""
    out: list[list[float | None]] = []
    for k in range(remaining + 1):
        for score in (0.0, 10.0):
            out.append([None] * k + [score] * (remaining - k))
    return out


def settled_verdict(
    known: Sequence[float | None],
    remaining: int,
    aggregation: Aggregation = "majority",
    threshold: float = 7.0,
    require_all_judges: bool = False,
) -> bool | None:
    """The panel's success, if the `remaining` judges not yet asked cannot change it whatever
    they answer (abstaining included); None while they could, or while the panel could err."""
    outcomes = {
        aggregate_votes([*known, *rest], aggregation, threshold, require_all_judges).success
        for rest in _completions(remaining)
    }
    if len(outcomes) != 1:
        return None
    return outcomes.pop()


def next_wave(
    known: Sequence[float | None],
    remaining: int,
    aggregation: Aggregation = "majority",
    threshold: float = 7.0,
    require_all_judges: bool = False,
) -> int:
    """How many more judges to ask now: the fewest whose answers could settle the verdict
    (all the remaining ones where no smaller number could)."""
    rule = (aggregation, threshold, require_all_judges)
    for k in range(1, remaining):
        for answers in _completions(k):
            if settled_verdict([*known, *answers], remaining - k, *rule) is not None:
                return k
    return remaining
