from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redjury.stats.hit_at_k import AUTO_K, hit_at_k, hit_at_k_per_prompt


def test_pooled_asr_twenty_percent_hides_certain_breach():
    # five prompts, one hit in five outputs each: pooled ASR 20%, yet five tries always win
    result = hit_at_k([(5, 1)] * 5, [1])
    assert result == {
        1: {"score": pytest.approx(0.2), "prompts": 5},
        5: {"score": pytest.approx(1.0), "prompts": 5},
    }


def test_empty_ks_gives_only_the_n_bucket():
    result = hit_at_k([(4, 1), (4, 0)], [])
    assert list(result) == [4]
    assert result[4] == {"score": 0.5, "prompts": 2}


def test_null_ks_omits_the_field():
    assert hit_at_k([(5, 1)], None) is None


def test_prompts_shorter_than_k_are_excluded():
    result = hit_at_k([(5, 1), (3, 1)], [4])
    # only the 5-output prompt reaches k = 4: 1 - C(4, 4) / C(5, 4) = 0.8
    assert result[4] == {"score": pytest.approx(0.8), "prompts": 1}
    # mixed output counts share the "n" bucket: both prompts were breached at least once
    assert result[AUTO_K] == {"score": 1.0, "prompts": 2}


def test_k_no_prompt_reaches_is_left_out():
    assert list(hit_at_k([(3, 1)], [10])) == [3]


def test_default_is_hit_at_one():
    assert set(hit_at_k([(5, 2), (5, 0)])) == {1, 5}


def test_estimator_matches_binomial_formula():
    rng = np.random.default_rng(0)
    n = rng.integers(1, 40, size=300)
    c = rng.integers(0, n + 1)
    for k in (1, 2, 5, 10):
        ok = n >= k
        got = hit_at_k_per_prompt(n[ok], c[ok], k)
        want = [
            1 - comb(int(a - b), k) / comb(int(a), k) for a, b in zip(n[ok], c[ok], strict=True)
        ]
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_accepts_numpy_columns():
    n = np.array([5, 5, 5, 5, 5])
    c = np.array([1, 1, 1, 1, 1])
    assert hit_at_k((n, c), [1])[1]["score"] == pytest.approx(0.2)


def test_tuple_of_pairs_is_read_as_prompts():
    assert hit_at_k(((5, 1), (4, 0)), [])[AUTO_K] == {"score": 0.5, "prompts": 2}


def test_prompts_without_outputs_are_ignored():
    assert hit_at_k([(0, 0), (2, 1)], [1]) == {
        1: {"score": pytest.approx(0.5), "prompts": 1},
        2: {"score": 1.0, "prompts": 1},
    }


def test_invalid_k_or_counts_raise():
    with pytest.raises(ValueError, match="hit_at_k values"):
        hit_at_k([(5, 1)], [0])
    with pytest.raises(ValueError):
        hit_at_k([(5, 6)], [1])


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.tuples(st.integers(0, 6), st.integers(0, 6)).filter(lambda p: p[1] <= p[0]),
        st.integers(0, 5),
        max_size=8,
    ),
    st.lists(st.integers(1, 7), max_size=3),
)
def test_weights_count_as_that_many_prompts(histogram: dict, ks: list[int]) -> None:
    """A histogram weighed (each distinct (n, c) once, with its count) gives what the same
    prompts one by one give."""
    pairs = list(histogram)
    expanded = [pair for pair in pairs for _ in range(histogram[pair])]
    weighed = hit_at_k(pairs, ks, weights=list(histogram.values()))
    one_by_one = hit_at_k(expanded, ks)
    assert weighed is not None and one_by_one is not None
    assert weighed.keys() == one_by_one.keys()
    for k, got in weighed.items():
        assert got == {"score": pytest.approx(one_by_one[k]["score"]), "prompts": got["prompts"]}
        assert got["prompts"] == one_by_one[k]["prompts"]


def test_an_eval_rows_hit_at_k_is_counted_from_the_histogram_not_one_entry_per_prompt():
    """Issue 45: the finish expanded each tally's (n, c) histogram into arrays of one entry
    per attempt, so its memory grew with the attempts (3M attempts: +120 MB at the end of a
    run). Weighed, a histogram of a trillion prompts needs no more than one of three: the
    expansion would have to allocate terabytes."""
    from redjury.config import ReportingSpec
    from redjury.evaluators import DetectorTally
    from redjury.report.statistics import eval_statistics

    tally = DetectorTally(passed=9 * 10**11, fails=10**11)
    tally.per_prompt = {(1, 0): 9 * 10**11, (1, 1): 10**11}
    spec = ReportingSpec(hit_at_k=[1], confidence_interval_method="none")
    fields = eval_statistics(spec, seed=1)
    got = fields("p", "d", tally)["hit_at_k"]
    assert got == {1: {"score": pytest.approx(0.1), "prompts": 10**12}}
