"""Scoring types: a versioned prompt template plus a parser each, registered by name."""

from redjury.judges.scoring.base import (
    MissingInput,
    Parsed,
    ScaleScoringType,
    ScoringType,
    Template,
    YesNoScoringType,
    get_scoring_type,
    register_scoring_type,
    scoring_types,
)

__all__ = [
    "MissingInput",
    "Parsed",
    "ScaleScoringType",
    "ScoringType",
    "Template",
    "YesNoScoringType",
    "get_scoring_type",
    "register_scoring_type",
    "scoring_types",
]
