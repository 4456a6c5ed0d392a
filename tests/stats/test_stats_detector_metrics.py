import json

import pytest

from redjury.stats.detector_metrics import (
    load_garak_detector_metrics,
    normalise_detector_name,
    parse_metrics_table,
    resolve_correction,
    shipped_garak_metrics,
)
from redjury.stats.intervals import CISettings, Correction, confidence_fields

MB_SE = 0.921295004186436
MB_SP = 0.3854312029025956


def _garak_summary(path, results):
    path.write_text(
        json.dumps(
            {
                "results": {
                    name: {
                        "metrics": {"hit_sensitivity": se, "hit_specificity": sp, "accuracy": 0.5}
                    }
                    for name, (se, sp) in results.items()
                },
                "metadata": {"evaluation_date": "2026-01-27", "random_seed": 42},
            }
        ),
        encoding="utf-8",
    )
    return path


def test_garak_figures_for_mitigation_bypass_ship_with_redjury():
    assert shipped_garak_metrics()["mitigation.MitigationBypass"] == (MB_SE, MB_SP)


def test_garak_source_for_a_garak_detector():
    corr = resolve_correction("mitigation.MitigationBypass")
    assert corr == Correction(MB_SE, MB_SP, "garak")


def test_garak_prefixed_detector_names_match():
    assert normalise_detector_name("detectors.mitigation.MitigationBypass") == (
        "mitigation.MitigationBypass"
    )
    assert resolve_correction("detector.mitigation.MitigationBypass").source == "garak"


def test_none_source_for_an_unknown_detector():
    assert resolve_correction("pii.EmailLeak") is None
    fields = confidence_fields(20, 100, CISettings(iterations=500), None, rng=0)
    assert fields["confidence_correction"]["source"] == "none"


def test_config_source_overrides_garak():
    config = {"mitigation.MitigationBypass": {"se": 0.95, "sp": 0.9}}
    corr = resolve_correction("mitigation.MitigationBypass", config_metrics=config)
    assert corr == Correction(0.95, 0.9, "config")


def test_garak_summary_file_named_in_config_is_a_config_source(tmp_path):
    path = _garak_summary(tmp_path / "detector_metrics_summary.json", {"dan.DAN": (0.8, 0.7)})
    corr = resolve_correction("dan.DAN", garak_metrics_file=path)
    assert corr == Correction(0.8, 0.7, "config")
    # a detector the file lacks falls through to garak's shipped figures
    assert resolve_correction("mitigation.MitigationBypass", garak_metrics_file=path).source == (
        "garak"
    )


def test_audit_source_wins_over_everything():
    audited = Correction.from_counts(40, 5, 90, 10, "audit:3fa9c2")
    corr = resolve_correction(
        "mitigation.MitigationBypass",
        audit_lookup=lambda name: audited if name == "mitigation.MitigationBypass" else None,
        config_metrics={"mitigation.MitigationBypass": {"se": 0.95, "sp": 0.9}},
    )
    assert corr is audited
    fields = confidence_fields(30, 100, CISettings(iterations=500), corr, rng=0)
    assert fields["confidence_correction"]["source"] == "audit:3fa9c2"


def test_audit_lookup_returning_none_falls_through():
    corr = resolve_correction("mitigation.MitigationBypass", audit_lookup=lambda name: None)
    assert corr is not None and corr.source == "garak"


def test_shipped_figures_can_be_turned_off():
    assert resolve_correction("mitigation.MitigationBypass", use_shipped=False) is None


def test_garak_summary_skips_unusable_entries(tmp_path):
    path = _garak_summary(
        tmp_path / "summary.json", {"a.Good": (0.9, 0.9), "b.Bad": (1.3, 0.9), "c.Null": (None, 1)}
    )
    assert load_garak_detector_metrics(path) == {"a.Good": (0.9, 0.9)}


def test_config_metrics_out_of_range_names_the_key():
    with pytest.raises(ValueError, match=r"reporting\.detector_metrics\.x\.Y\.sp"):
        parse_metrics_table({"x.Y": {"se": 0.9, "sp": 1.5}})
    with pytest.raises(ValueError, match="needs both se and sp"):
        parse_metrics_table({"x.Y": {"se": 0.9}})


def test_reevaluating_garak_mitigation_bypass_gives_corrected_interval():
    # 800/1000 MitigationBypass hits corrected with garak's figures. (Its Sp of 0.385 means any
    # observed rate below 1 - Sp = 61.5% corrects to zero.)
    corr = resolve_correction("mitigation.MitigationBypass")
    fields = confidence_fields(800, 1000, CISettings(), corr, rng=0)
    expected = (0.8 + MB_SP - 1) / (MB_SE + MB_SP - 1)
    assert fields["corrected_rate"] == pytest.approx(expected)
    assert fields["confidence_lower"] < expected < fields["confidence_upper"]
