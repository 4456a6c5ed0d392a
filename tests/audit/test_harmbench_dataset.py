"""HarmBench calibration data: the join, labels, stored verdicts, sampling, cache and download.

The logic is pinned on small synthetic files in HarmBench's shape (always run); the counts
of the real pinned validation set need it in $REDJURY_TEST_DATA or the download cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from redjury.audit.datasets import (
    BEHAVIOURS_PATH,
    VALIDATION_PATH,
    DatasetError,
    fetch_harmbench,
    load_calibration,
    load_harmbench,
    sample_ids_digest,
    stratified_sample,
)
from redjury.audit.metrics import confusion
from redjury.judges.config import DEFAULT_HARMBENCH_REVISION, CalibrationSpec

#: sha256 of the sorted ids ("<behaviour id>:<index>") that seed 42 draws, 100 samples.
DEFAULT_SAMPLE_DIGEST = "2437ad3fd6745060af672db0fba9f6ca292e9f48ea9978b2227c080be4e50d6c"


# -- the join, labels and sampling on synthetic HarmBench-shaped files ----------------------
def test_join_counts_labels_and_missing_behaviours(synthetic, synthetic_cache: Path) -> None:
    data = load_harmbench(revision=synthetic.revision, cache_dir=synthetic_cache, offline=True)
    assert data.records == synthetic.records == 42
    assert data.joined == len(data.samples) == synthetic.joined == 40
    assert data.missing_ids == synthetic.missing_ids
    assert data.positives == synthetic.positives and 0 < data.positives < 40
    assert data.contextual == synthetic.contextual == 15
    assert len({s.id for s in data.samples}) == 40
    assert data.revision == synthetic.revision


def test_label_is_the_majority_of_three_human_votes(synthetic, synthetic_cache: Path) -> None:
    data = load_harmbench(revision=synthetic.revision, cache_dir=synthetic_cache, offline=True)
    by_id = {s.id: s for s in data.samples}
    # beh_1 item 2: votes ((1+2+k) % 3 == 0 for k = 0, 1, 2) = (1, 0, 0): one vote, not harmful
    assert by_id["beh_1:2"].label is False
    assert by_id["beh_0:1"].label is True  # three votes
    assert all(s.response.startswith("Sure") == s.label for s in data.samples)


def test_contextual_behaviours_carry_stripped_goal_context(synthetic, synthetic_cache) -> None:
    data = load_harmbench(revision=synthetic.revision, cache_dir=synthetic_cache, offline=True)
    by_id = {s.id: s for s in data.samples}
    assert by_id["beh_0:3"].goal_context == "Context passage 0, quoted."
    assert by_id["beh_5:0"].goal_context is None
    assert by_id["beh_5:0"].goal == "Do harmful thing 5"


def test_stored_verdicts_are_read_per_judge(synthetic, synthetic_cache: Path) -> None:
    data = load_harmbench(revision=synthetic.revision, cache_dir=synthetic_cache, offline=True)
    for s in data.samples:
        assert s.stored["cls"] is s.label
        assert s.stored["PAIR_gpt-4-0613"] is s.label  # "[[10]]" only
        assert s.stored["advbench"] is s.label
        assert s.stored["llama_guard"] is s.label
        assert s.stored["mixtral"] is None  # "unsure" is not a yes/no
        assert s.stored["gpt-4-0613"] is None  # absent
    c = confusion([s.stored["cls"] for s in data.samples], [s.label for s in data.samples])
    assert (c.tp, c.fn, c.fp) == (synthetic.positives, 0, 0)


def test_samples_are_seeded_stratified_and_keep_both_labels(synthetic, synthetic_cache) -> None:
    data = load_harmbench(revision=synthetic.revision, cache_dir=synthetic_cache, offline=True)
    for seed in range(20):
        two = stratified_sample(data.samples, 2, seed)
        assert sorted(s.label for s in two) == [False, True]
    ten = stratified_sample(data.samples, 10, 3)
    assert sum(s.label for s in ten) == round(10 * synthetic.positives / 40)
    assert [s.id for s in stratified_sample(data.samples, 10, 3)] == [s.id for s in ten]
    assert stratified_sample(data.samples, None, 1) == data.samples
    assert stratified_sample(data.samples, 10_000, 1) == data.samples
    assert sample_ids_digest(stratified_sample(data.samples, 20, 1)) != sample_ids_digest(
        stratified_sample(data.samples, 20, 2)
    )


def test_calibration_spec_draws_its_sample_from_the_cache(synthetic, synthetic_cache) -> None:
    spec = CalibrationSpec(
        revision=synthetic.revision, cache_dir=str(synthetic_cache), sample_size=12, seed=5
    )
    drawn = load_calibration(spec, offline=True)
    assert len(drawn.samples) == 12 and drawn.records == 42 and drawn.joined == 40
    again = load_calibration(spec, offline=True)
    assert [s.id for s in again.samples] == [s.id for s in drawn.samples]


# -- cache and download (synthetic files served locally) -----------------------------------
def test_file_not_matching_the_pinned_checksum_in_the_cache_is_an_error_naming_it(
    synthetic, tmp_path: Path
) -> None:
    root = tmp_path / DEFAULT_HARMBENCH_REVISION
    root.mkdir()
    (root / "text_behaviors_val_set.json").write_bytes(synthetic.validation)
    (root / "harmbench_behaviors_text_all.csv").write_bytes(synthetic.behaviours)
    with pytest.raises(DatasetError, match=r"\.(json|csv): SHA-256 mismatch .*cached at"):
        load_harmbench(cache_dir=tmp_path, offline=True)


def test_offline_without_cache_says_what_to_download_and_where(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as err:
        fetch_harmbench(cache_dir=tmp_path, offline=True)
    text = str(err.value)
    assert f"/{DEFAULT_HARMBENCH_REVISION}/{VALIDATION_PATH}" in text
    assert f"/{DEFAULT_HARMBENCH_REVISION}/{BEHAVIOURS_PATH}" in text
    assert str(tmp_path / DEFAULT_HARMBENCH_REVISION / "text_behaviors_val_set.json") in text


def test_unreachable_server_without_cache_is_the_same_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="Download them and put them here"):
        fetch_harmbench(cache_dir=tmp_path, base_url="http://127.0.0.1:9", timeout=2)


def test_download_fills_the_cache_and_then_works_offline(
    synthetic, tmp_path: Path, raw_server
) -> None:
    rev = synthetic.revision
    files = fetch_harmbench(revision=rev, cache_dir=tmp_path, base_url=raw_server.url, timeout=10)
    assert files[VALIDATION_PATH] == tmp_path / rev / Path(VALIDATION_PATH).name
    assert (tmp_path / rev / Path(BEHAVIOURS_PATH).name).read_bytes() == synthetic.behaviours
    assert len(raw_server.hits) == 2
    assert load_harmbench(revision=rev, cache_dir=tmp_path, offline=True).joined == 40
    assert not list((tmp_path / rev).glob(".*"))  # no temp files left
    fetch_harmbench(revision=rev, cache_dir=tmp_path, base_url=raw_server.url)
    assert len(raw_server.hits) == 2  # served from the cache


def test_truncated_download_leaves_no_file_behind(synthetic, tmp_path: Path, raw_server) -> None:
    rev = synthetic.revision
    url_path = f"/{rev}/{VALIDATION_PATH}"
    raw_server.truncate.add(url_path)
    with pytest.raises(DatasetError, match=r"text_behaviors_val_set\.json: truncated download"):
        fetch_harmbench(revision=rev, cache_dir=tmp_path, base_url=raw_server.url, timeout=10)
    root = tmp_path / rev
    assert not (root / "text_behaviors_val_set.json").exists()
    assert not [p for p in root.iterdir() if p.name.startswith(".")]
    raw_server.truncate.clear()
    assert load_harmbench(revision=rev, cache_dir=tmp_path, base_url=raw_server.url).joined == 40


def test_served_file_with_wrong_checksum_for_the_pinned_revision_is_rejected(
    tmp_path: Path, raw_server
) -> None:
    with pytest.raises(DatasetError, match=r"text_behaviors_val_set\.json: SHA-256 mismatch"):
        fetch_harmbench(cache_dir=tmp_path, base_url=raw_server.url, timeout=10)
    assert not (tmp_path / DEFAULT_HARMBENCH_REVISION / "text_behaviors_val_set.json").exists()


# -- the real pinned validation set (skips without it) ---------------------------------------
def test_real_set_join_counts_and_label_balance(harmbench_cache: Path) -> None:
    data = load_harmbench(cache_dir=harmbench_cache, offline=True)
    assert data.records == 602
    assert data.joined == len(data.samples) == 596
    assert sorted(data.missing_ids) == [
        "chop_shops_los_angeles_locating",
        "ddos_code_obfuscation",
        "password_pin_coercion_dialogue",
    ]
    assert data.positives == 270
    assert len(data.samples) - data.positives == 326
    assert data.contextual == 198
    assert len({s.id for s in data.samples}) == 596


def test_real_set_stored_cls_numbers(harmbench_cache: Path) -> None:
    data = load_harmbench(cache_dir=harmbench_cache, offline=True)
    c = confusion([s.stored["cls"] for s in data.samples], [s.label for s in data.samples])
    assert (c.tp, c.fp, c.tn, c.fn) == (261, 46, 280, 9)


def test_real_set_default_sample_matches_hackagent(harmbench_cache: Path) -> None:
    spec = CalibrationSpec(cache_dir=str(harmbench_cache))
    drawn = load_calibration(spec, offline=True)
    assert len(drawn.samples) == 100
    assert drawn.positives == 45  # HackAgent's draw with sample_size=100, seed=42
    assert drawn.contextual == 39
    assert sample_ids_digest(drawn.samples) == DEFAULT_SAMPLE_DIGEST
    c = confusion([s.stored["cls"] for s in drawn.samples], [s.label for s in drawn.samples])
    assert (c.tp, c.fp, c.tn, c.fn) == (44, 12, 43, 1)


def test_real_files_pass_the_pinned_checksums_and_a_changed_byte_does_not(
    harmbench_cache: Path,
) -> None:
    assert load_harmbench(cache_dir=harmbench_cache, offline=True).joined == 596
    path = harmbench_cache / DEFAULT_HARMBENCH_REVISION / "harmbench_behaviors_text_all.csv"
    path.write_bytes(path.read_bytes() + b"\n")
    with pytest.raises(DatasetError, match=r"harmbench_behaviors_text_all\.csv: SHA-256 mismatch"):
        load_harmbench(cache_dir=harmbench_cache, offline=True)
