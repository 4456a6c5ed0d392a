"""Agreement metrics for the audit: confusion counts, accuracy/precision/recall/F1/Cohen's κ with
intervals (Wilson; vectorised bootstrap for κ and F1), Fleiss' κ and flip counts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from redjury.stats import wilson_interval

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

DEFAULT_BOOTSTRAP = 2000
DEFAULT_LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class Confusion:
    tp: int
    fp: int
    tn: int
    fn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn


def _bools(values: Sequence[bool] | npt.ArrayLike) -> BoolArray:
    return np.asarray(values, dtype=bool)


def confusion(predicted: npt.ArrayLike, labels: npt.ArrayLike) -> Confusion:
    p, y = _bools(predicted), _bools(labels)
    if p.shape != y.shape:
        raise ValueError("predictions and labels differ in length")
    return Confusion(
        tp=int(np.sum(p & y)),
        fp=int(np.sum(p & ~y)),
        tn=int(np.sum(~p & ~y)),
        fn=int(np.sum(~p & y)),
    )


# -- statistics that work on one confusion or, vectorised, on B of them ---------------------
def _kappa(tp: Any, fp: Any, tn: Any, fn: Any) -> Any:
    """Cohen's κ for two binary raters from the 2×2 table; NaN where chance agreement is 1."""
    n = np.asarray(tp + fp + tn + fn, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        po = (tp + tn) / n
        pe = ((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp)) / (n * n)
        return np.where(pe < 1.0, (po - pe) / (1.0 - pe), np.nan)


def _f1(tp: Any, fp: Any, fn: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = np.asarray(2 * tp + fp + fn, dtype=np.float64)
        return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), np.nan)


def cohen_kappa(a: npt.ArrayLike, b: npt.ArrayLike) -> float | None:
    """Cohen's κ between two binary raters; None when undefined (both constant and equal)."""
    c = confusion(a, b)
    value = float(_kappa(c.tp, c.fp, c.tn, c.fn))
    return None if np.isnan(value) else value


def fleiss_kappa(votes: npt.ArrayLike) -> float | None:
    """Fleiss' κ of an items × raters 0/1 matrix (every item rated by every rater).

    None with fewer than two raters or items, or when every vote falls in one category.
    """
    m = np.asarray(votes, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 2:
        return None
    n_items, k = m.shape
    yes = m.sum(axis=1)
    counts = np.stack([k - yes, yes], axis=1)  # items × categories
    p_j = counts.sum(axis=0) / (n_items * k)
    p_i = (counts * (counts - 1)).sum(axis=1) / (k * (k - 1))
    p_bar, p_e = float(p_i.mean()), float(np.sum(p_j**2))
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


def _bootstrap_counts(
    predicted: BoolArray, labels: BoolArray, iterations: int, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    n = predicted.shape[0]
    # Encode each sample's cell (0 tp, 1 fp, 2 tn, 3 fn) once; a resample is a draw of cells.
    cells = np.where(predicted, np.where(labels, 0, 1), np.where(labels, 3, 2)).astype(np.int64)
    idx = rng.integers(0, n, size=(iterations, n))
    drawn = cells[idx]
    # Counting per row with offsets keeps it one bincount instead of B Python loops.
    offsets = (np.arange(iterations, dtype=np.int64) * 4)[:, None]
    table = np.bincount((drawn + offsets).ravel(), minlength=4 * iterations).reshape(iterations, 4)
    t = table.astype(np.float64)
    return t[:, 0], t[:, 1], t[:, 2], t[:, 3]


def _percentile_ci(values: FloatArray, level: float) -> list[float] | None:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(finite, [alpha, 1.0 - alpha])
    return [round(float(lo), 6), round(float(hi), 6)]


def _proportion(k: int, n: int, level: float) -> tuple[float | None, list[float] | None]:
    if n == 0:
        return None, None
    lo, hi = wilson_interval(k, n, level)
    return round(k / n, 6), [round(lo, 6), round(hi, 6)]


def binary_metrics(
    predicted: npt.ArrayLike,
    labels: npt.ArrayLike,
    abstained: npt.ArrayLike | None = None,
    *,
    level: float = DEFAULT_LEVEL,
    iterations: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> dict[str, Any]:
    """Counts and rates of `predicted` against `labels`, each rate with `<name>_ci`.

    An abstention is a non-detection in the counts (what a run does with it) and is also
    counted on its own as `abstentions` / `abstention_rate`. Rates that are 0/0 are None.
    """
    p, y = _bools(predicted), _bools(labels)
    a = np.zeros_like(p) if abstained is None else _bools(abstained)
    if not (p.shape == y.shape == a.shape) or p.ndim != 1:
        raise ValueError("predicted, labels and abstained must be 1-D and equally long")
    if p.size == 0:
        raise ValueError("no samples to measure")
    p = p & ~a
    c = confusion(p, y)
    n = c.n
    out: dict[str, Any] = {"n": n, "tp": c.tp, "fp": c.fp, "tn": c.tn, "fn": c.fn}
    out["abstentions"] = int(a.sum())
    for name, k, m in (
        ("accuracy", c.tp + c.tn, n),
        ("precision", c.tp, c.tp + c.fp),
        ("recall", c.tp, c.tp + c.fn),
        ("specificity", c.tn, c.tn + c.fp),
        ("abstention_rate", int(a.sum()), n),
    ):
        out[name], out[f"{name}_ci"] = _proportion(k, m, level)
    f1 = float(_f1(c.tp, c.fp, c.fn))
    kappa = float(_kappa(c.tp, c.fp, c.tn, c.fn))
    rng = np.random.default_rng(seed)
    btp, bfp, btn, bfn = _bootstrap_counts(p, y, iterations, rng)
    out["f1"] = None if np.isnan(f1) else round(f1, 6)
    out["f1_ci"] = None if np.isnan(f1) else _percentile_ci(_f1(btp, bfp, bfn), level)
    out["cohen_kappa"] = None if np.isnan(kappa) else round(kappa, 6)
    out["cohen_kappa_ci"] = (
        None if np.isnan(kappa) else _percentile_ci(_kappa(btp, bfp, btn, bfn), level)
    )
    return out


def sensitivity_counts(
    predicted: npt.ArrayLike, labels: npt.ArrayLike, abstained: npt.ArrayLike
) -> Confusion:
    """The confusion over the samples that got a verdict: what Se/Sp corrections use, since
    a run counts an abstention as no verdict rather than as safe."""
    keep = ~_bools(abstained)
    return confusion(_bools(predicted)[keep], _bools(labels)[keep])


def flip_metrics(
    before: npt.ArrayLike, after: npt.ArrayLike, labels: npt.ArrayLike
) -> dict[str, Any]:
    """What one wrapper changed about one judge's (detected / not detected) verdicts.

    flip_rate is the share of the judge's verdicts the wrapper changed: flips / samples.
    """
    b, w, y = _bools(before), _bools(after), _bools(labels)
    n = int(b.size)
    flips = int(np.sum(b != w))
    acc_before = float(np.mean(b == y)) if n else 0.0
    acc_after = float(np.mean(w == y)) if n else 0.0
    return {
        "n": n,
        "flips": flips,
        "flip_rate": round(flips / n, 6) if n else 0.0,
        "detected_to_missed": int(np.sum(b & ~w)),
        "missed_to_detected": int(np.sum(~b & w)),
        "true_positives_lost": int(np.sum(b & ~w & y)),
        "accuracy": round(acc_after, 6),
        "accuracy_change": round(acc_after - acc_before, 6),
    }


def stored_judge_metrics(
    stored: Sequence[Mapping[str, bool | None]],
    labels: npt.ArrayLike,
    names: Sequence[str],
    **kwargs: Any,
) -> dict[str, dict[str, Any]]:
    """Metrics of verdicts a dataset already holds; a missing verdict counts as an abstention."""
    out: dict[str, dict[str, Any]] = {}
    y = _bools(labels)
    for name in names:
        values = [row.get(name) for row in stored]
        if all(v is None for v in values):
            continue
        predicted = np.array([bool(v) for v in values])
        abstained = np.array([v is None for v in values])
        out[name] = binary_metrics(predicted, y, abstained, **kwargs)
    return out
