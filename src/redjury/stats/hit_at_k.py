"""hit@k: the chance that an attacker allowed k tries at a prompt breaches it at least once,
averaged over prompts (the pass@k estimator of Chen et al. 2021, as garak 0.17 reports it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]

# numpy is imported where it is used: `redjury.stats` binds `hit_at_k` when it is imported,
# and that must not load numpy (see the package's docstring).

#: Key of the k = n bucket when prompts have different numbers of scoreable outputs.
AUTO_K = "n"


def _counts(
    per_prompt: Sequence[tuple[int, int]] | tuple[npt.NDArray[Any], npt.NDArray[Any]],
) -> tuple[IntArray, IntArray]:
    import numpy as np

    # Only numpy arrays mark the (n, c) columns form: a tuple of two (n, c) tuples is two prompts.
    if (
        isinstance(per_prompt, tuple)
        and len(per_prompt) == 2
        and isinstance(per_prompt[0], np.ndarray)
    ):
        n = np.asarray(per_prompt[0], dtype=np.int64)
        c = np.asarray(per_prompt[1], dtype=np.int64)
    else:
        pairs = np.asarray(per_prompt, dtype=np.int64).reshape(-1, 2)
        n, c = pairs[:, 0], pairs[:, 1]
    if n.shape != c.shape:
        raise ValueError("hit_at_k needs as many hit counts as output counts")
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("hit_at_k needs 0 <= hits <= outputs for every prompt")
    return n, c


def hit_at_k_per_prompt(n: IntArray, c: IntArray, k: int) -> npt.NDArray[np.float64]:
    """1 − C(n − c, k) / C(n, k) for each prompt (requires n ≥ k ≥ 1).

    Evaluated as 1 − Π_{j=0}^{k−1} (n − c − j) / (n − j), with a factor ≤ 0 meaning every
    k-subset holds a hit (estimate 1); the product avoids huge binomial coefficients.
    """
    import numpy as np

    ratio = np.ones(n.shape, dtype=np.float64)
    for j in range(k):
        ratio *= np.clip((n - c - j) / (n - j), 0.0, None)
    return 1.0 - ratio


def hit_at_k(
    per_prompt: Sequence[tuple[int, int]] | tuple[npt.NDArray[Any], npt.NDArray[Any]],
    ks: Sequence[int] | None = (1,),
    weights: Sequence[int] | npt.NDArray[Any] | None = None,
) -> dict[int | str, dict[str, Any]] | None:
    """hit@k for each k in `ks`, plus the k = n bucket; None when `ks` is None.

    per_prompt is one (n, c) per prompt (n scoreable outputs, c hits), or a pair of numpy
    arrays (n, c); `weights`, when given, says how many prompts each (n, c) stands for (a
    histogram of millions of prompts is a few distinct pairs: memory stays flat).
    For each k: score = mean over prompts with n ≥ k of 1 − C(n − c, k)/C(n, k),
    prompts = how many had n ≥ k; a k no prompt reaches is left out. The k = n bucket scores
    every prompt at its own n, which is 1 if c > 0 else 0 ("ever breached"); it is keyed by
    n when all prompts share it, else "n". Prompts with n = 0 are ignored.
    Returns {k: {"score": float, "prompts": int}} ({} when no prompt has an output).
    """
    import numpy as np

    if ks is None:
        return None
    if any(isinstance(k, bool) or int(k) != k or k < 1 for k in ks):
        raise ValueError(f"hit_at_k values must be integers >= 1, got {list(ks)!r}")
    n, c = _counts(per_prompt)
    w = np.ones(n.shape, np.int64) if weights is None else np.asarray(weights, np.int64)
    if w.shape != n.shape or np.any(w < 0):
        raise ValueError("hit_at_k needs one count >= 0 of prompts per (n, c)")
    keep = (n >= 1) & (w > 0)
    n, c, w = n[keep], c[keep], w[keep]
    result: dict[int | str, dict[str, Any]] = {}
    if n.size == 0:
        return result
    for k in sorted({int(k) for k in ks}):
        eligible = n >= k
        count = int(w[eligible].sum())
        if count == 0:
            continue
        scores = hit_at_k_per_prompt(n[eligible], c[eligible], k)
        result[k] = {"score": _mean(scores, w[eligible], count), "prompts": count}
    # min/max rather than np.unique: numpy 2's unique imports numpy.ma (~10 ms a run).
    lo, hi = int(n.min()), int(n.max())
    auto_key: int | str = lo if lo == hi else AUTO_K
    if auto_key not in result:
        total = int(w.sum())
        breached = (c > 0).astype(np.float64)
        result[auto_key] = {"score": _mean(breached, w, total), "prompts": total}
    return result


def _mean(scores: npt.NDArray[np.float64], w: IntArray, total: int) -> float:
    """The mean of `scores`, each counted `w` times (the plain mean when every count is 1)."""
    import numpy as np

    if int(w.max()) == 1:
        return float(scores.mean())
    return float(np.dot(scores, w.astype(np.float64)) / total)
