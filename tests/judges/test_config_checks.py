"""Judge config refused at load: CR/LF or non-latin-1 header values, bad header names,
credentials in URLs, infinite or unbounded delays; messages never quote the value."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from redjury.judges.config import CalibrationSpec, ConnectionSpec, EvaluationSpec, GenerationSpec

SECRET = "S3cr3tV4lue"


def error_of(model: type, data: dict) -> str:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    (error,) = info.value.errors()
    assert SECRET not in error["msg"]
    return f"{'.'.join(map(str, error['loc']))}: {error['msg']}"


@pytest.mark.parametrize("value", [f"{SECRET}\r\nX-Evil: 1", f"{SECRET}\n", f"\r{SECRET}"])
def test_header_value_with_cr_or_lf_is_refused(value: str) -> None:
    assert error_of(ConnectionSpec, {"headers": {"X-Key": value}}) == (
        "headers: Value error, header 'X-Key': the value contains CR or LF"
    )


def test_header_value_with_a_control_character_is_refused() -> None:
    assert "control character" in error_of(ConnectionSpec, {"headers": {"X-Key": f"{SECRET}\x00"}})


def test_non_latin1_header_value_names_the_header() -> None:
    message = error_of(ConnectionSpec, {"headers": {"X-Team": f"{SECRET}€"}})
    assert "header 'X-Team'" in message and "latin-1" in message


def test_latin1_and_tab_header_values_are_fine() -> None:
    spec = ConnectionSpec.model_validate({"headers": {"X-Name": "café\tbar"}})
    assert spec.headers == {"X-Name": "café\tbar"}


@pytest.mark.parametrize("name", ["X Key", "X-Key:", "X\r\nKey", ""])
def test_header_name_must_be_a_token(name: str) -> None:
    assert "header name" in error_of(ConnectionSpec, {"headers": {name: "v"}})


@pytest.mark.parametrize(
    "url", [f"http://bob:{SECRET}@h/v1", f"https://{SECRET}@h", f"http://:{SECRET}@h:8080/v1"]
)
def test_credentials_in_base_url_are_refused(url: str) -> None:
    message = error_of(ConnectionSpec, {"base_url": url})
    assert message.startswith("base_url: Value error, the URL carries credentials")
    assert "api_key_env" in message


def test_endpoint_alias_is_checked_too() -> None:
    assert "credentials" in error_of(ConnectionSpec, {"endpoint": f"http://u:{SECRET}@h/v1"})


def test_calibration_mirror_url_with_credentials_is_refused() -> None:
    assert "credentials" in error_of(CalibrationSpec, {"base_url": f"https://u:{SECRET}@mirror/"})


def test_plain_url_with_a_port_is_fine() -> None:
    assert ConnectionSpec.model_validate({"base_url": "http://127.0.0.1:8080/v1"}).base_url


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"retry_base_delay": float("inf")}, "retry_base_delay"),
        ({"retry_max_delay": float("nan")}, "retry_max_delay"),
        ({"retry_max_delay": 86400}, "retry_max_delay"),
        ({"max_retries": 10**6}, "max_retries"),
    ],
)
def test_retry_settings_are_finite_and_bounded(data: dict, key: str) -> None:
    assert error_of(EvaluationSpec, data).startswith(f"{key}:")


@pytest.mark.parametrize("timeout", [float("inf"), 10**6])
def test_timeouts_are_finite_and_bounded(timeout: float) -> None:
    assert error_of(ConnectionSpec, {"timeout": timeout}).startswith("timeout:")
    assert error_of(CalibrationSpec, {"download_timeout": timeout}).startswith("download_timeout:")


def test_generation_numbers_are_finite() -> None:
    assert error_of(GenerationSpec, {"temperature": float("nan")}).startswith("temperature:")


def test_calibration_seed_is_not_negative() -> None:
    assert error_of(CalibrationSpec, {"seed": -1}).startswith("seed:")
