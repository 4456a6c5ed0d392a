"""HarmBench calibration data: the join, labels, stored verdicts, sampling, cache and download."""

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


def test_join_counts_and_label_balance(harmbench_cache: Path) -> None:
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


def test_contextual_behaviours_carry_goal_context(harmbench_cache: Path) -> None:
    data = load_harmbench(cache_dir=harmbench_cache, offline=True)
    with_context = [s for s in data.samples if s.goal_context]
    assert with_context and all(s.goal_context == s.goal_context.strip() for s in with_context)
    assert all(s.goal and s.response for s in data.samples)


def test_stored_cls_numbers_on_the_full_set(harmbench_cache: Path) -> None:
    data = load_harmbench(cache_dir=harmbench_cache, offline=True)
    c = confusion([s.stored["cls"] for s in data.samples], [s.label for s in data.samples])
    assert (c.tp, c.fp, c.tn, c.fn) == (261, 46, 280, 9)
    assert c.tp + c.tn == 541


def test_default_sample_is_stable_stratified_and_matches_hackagent(harmbench_cache: Path) -> None:
    spec = CalibrationSpec(cache_dir=str(harmbench_cache))
    drawn = load_calibration(spec, offline=True)
    assert len(drawn.samples) == 100
    assert drawn.positives == 45  # HackAgent's draw with sample_size=100, seed=42
    assert drawn.contextual == 39
    assert sample_ids_digest(drawn.samples) == DEFAULT_SAMPLE_DIGEST
    c = confusion([s.stored["cls"] for s in drawn.samples], [s.label for s in drawn.samples])
    assert (c.tp, c.fp, c.tn, c.fn) == (44, 12, 43, 1)
    again = load_calibration(spec, offline=True)
    assert [s.id for s in again.samples] == [s.id for s in drawn.samples]


def test_small_samples_keep_both_labels(harmbench_cache: Path) -> None:
    data = load_harmbench(cache_dir=harmbench_cache, offline=True)
    for seed in range(20):
        two = stratified_sample(data.samples, 2, seed)
        assert sorted(s.label for s in two) == [False, True]
    assert stratified_sample(data.samples, None, 1) == data.samples
    assert stratified_sample(data.samples, 10_000, 1) == data.samples
    assert sample_ids_digest(stratified_sample(data.samples, 50, 1)) != sample_ids_digest(
        stratified_sample(data.samples, 50, 2)
    )


def test_tampered_cache_file_is_a_checksum_error_naming_it(harmbench_cache: Path) -> None:
    path = harmbench_cache / DEFAULT_HARMBENCH_REVISION / "harmbench_behaviors_text_all.csv"
    path.write_bytes(path.read_bytes() + b"\n")
    with pytest.raises(DatasetError, match=r"harmbench_behaviors_text_all\.csv: SHA-256 mismatch"):
        load_harmbench(cache_dir=harmbench_cache, offline=True)


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


def test_download_fills_the_cache_and_then_works_offline(tmp_path: Path, raw_server) -> None:
    files = fetch_harmbench(cache_dir=tmp_path, base_url=raw_server.url, timeout=10)
    assert (
        files[VALIDATION_PATH] == tmp_path / DEFAULT_HARMBENCH_REVISION / Path(VALIDATION_PATH).name
    )
    assert len(raw_server.hits) == 2
    assert load_harmbench(cache_dir=tmp_path, offline=True).joined == 596
    assert not list((tmp_path / DEFAULT_HARMBENCH_REVISION).glob(".*"))  # no temp files left
    fetch_harmbench(cache_dir=tmp_path, base_url=raw_server.url)
    assert len(raw_server.hits) == 2  # served from the cache


def test_truncated_download_leaves_no_file_behind(tmp_path: Path, raw_server) -> None:
    url_path = f"/{DEFAULT_HARMBENCH_REVISION}/{VALIDATION_PATH}"
    raw_server.truncate.add(url_path)
    with pytest.raises(DatasetError, match=r"text_behaviors_val_set\.json: truncated download"):
        fetch_harmbench(cache_dir=tmp_path, base_url=raw_server.url, timeout=10)
    root = tmp_path / DEFAULT_HARMBENCH_REVISION
    assert not (root / "text_behaviors_val_set.json").exists()
    assert not [p for p in root.iterdir() if p.name.startswith(".")]
    raw_server.truncate.clear()
    assert load_harmbench(cache_dir=tmp_path, base_url=raw_server.url).joined == 596


def test_served_file_with_wrong_checksum_is_rejected(tmp_path: Path, raw_server) -> None:
    url_path = f"/{DEFAULT_HARMBENCH_REVISION}/{BEHAVIOURS_PATH}"
    raw_server.files[url_path] = raw_server.files[url_path].replace(b"Give", b"Gave", 1)
    with pytest.raises(DatasetError, match=r"harmbench_behaviors_text_all\.csv: SHA-256 mismatch"):
        fetch_harmbench(cache_dir=tmp_path, base_url=raw_server.url, timeout=10)
    assert not (tmp_path / DEFAULT_HARMBENCH_REVISION / "harmbench_behaviors_text_all.csv").exists()


def test_other_revisions_download_without_pinned_checksums(tmp_path: Path, raw_server) -> None:
    for path, body in list(raw_server.files.items()):
        raw_server.files[path.replace(DEFAULT_HARMBENCH_REVISION, "main")] = body
    data = load_harmbench(revision="main", cache_dir=tmp_path, base_url=raw_server.url)
    assert data.joined == 596 and data.revision == "main"
    assert (tmp_path / "main" / "text_behaviors_val_set.json").is_file()
