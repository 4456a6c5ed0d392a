"""Masking secrets and found PII, and stripping credentials from URLs."""

from __future__ import annotations

import base64
import json

from redjury.detectors.secrets import SecretExfiltrationDetector, SecretExfiltrationParams
from redjury.judges.agentic.toxicity import ToxicityDetector, ToxicityParams
from redjury.judges.config import EvaluationSpec
from redjury.judges.panel import JudgePanelDetector
from redjury.redaction import (
    Redactor,
    mask_found_pii,
    run_redactors,
    strip_url_credentials,
    url_credentials,
    without_url_credentials,
)


def test_user_info_is_stripped_from_every_url_in_a_text() -> None:
    text = (
        "cannot reach http://alice:s3cr%40t@judge.internal:8000/v1 "
        "nor HTTPS://bob@x.org?q=a@b, mail carol@example.com at ftp://h/p@q"
    )
    assert strip_url_credentials(text) == (
        "cannot reach http://judge.internal:8000/v1 "
        "nor HTTPS://x.org?q=a@b, mail carol@example.com at ftp://h/p@q"
    )


def test_a_password_holding_an_at_sign_is_stripped_whole() -> None:
    assert strip_url_credentials("http://u:p@ss@host/") == "http://host/"


def test_a_config_dump_keeps_its_shape_without_url_credentials() -> None:
    dump = {"judges": [{"base_url": "http://u:pw@h:1/v1", "timeout": 5, "tags": ["x://a:b@c"]}]}
    assert without_url_credentials(dump) == {
        "judges": [{"base_url": "http://h:1/v1", "timeout": 5, "tags": ["x://c"]}]
    }


def test_url_credentials_name_every_form_a_client_could_send() -> None:
    creds = url_credentials("http://me:p%40ss@h/v1")
    assert {"me:p%40ss", "me:p@ss", "p%40ss", "p@ss"} <= set(creds)
    assert base64.b64encode(b"me:p@ss").decode() in creds
    assert url_credentials("http://h/v1") == [] and url_credentials(None) == []


def test_a_value_echoed_inside_json_is_masked_in_its_escaped_form_too() -> None:
    secret = 'pa"ss\\wörd-1234'
    echoed = json.dumps({"header": secret}) + json.dumps({"h": secret}, ensure_ascii=False)
    masked = Redactor([secret]).text(echoed)
    assert "pa" not in masked and "1234" in masked


def test_pii_a_judge_quotes_is_masked_plain_and_spaced() -> None:
    text = "You sent: card 4539148803436467, card 4111 1111 1111 1111, ssn 219-09-9999."
    assert mask_found_pii(text) == ("You sent: card ****6467, card ****1111, ssn ****9999.")
    assert mask_found_pii("Yes") == "Yes"


def _panel(url: str) -> JudgePanelDetector:
    spec = EvaluationSpec.model_validate(
        {
            "judges": [
                {
                    "name": "j",
                    "connection": {"base_url": url, "headers": {"x-k": "panel-header-1"}},
                    "generation": {"seed": 1},
                }
            ]
        }
    )
    return JudgePanelDetector.from_spec(spec, use_cache=False)


def test_every_judges_credentials_are_masked_always_and_markers_only_when_redacting() -> None:
    markers_det = SecretExfiltrationDetector(SecretExfiltrationParams(markers=["MARK-ER-99"]))
    panel = _panel("http://127.0.0.1:9/v1")
    toxicity = ToxicityDetector(
        ToxicityParams.model_validate(
            {
                "judge": {
                    "name": "t",
                    "connection": {
                        "base_url": "http://127.0.0.1:9",
                        "headers": {"x-t": "tox-header-2"},
                    },
                },
                "cache": False,
            }
        )
    )
    markers, always = run_redactors([markers_det, panel, toxicity])
    # The agentic detector's header is a credential, not a marker: --no-redact keeps it masked.
    assert set(always.values) == {"panel-header-1", "tox-header-2"}
    assert markers.values == ("MARK-ER-99",)
    # Both judges were armed with the markers too.
    for judge in (panel.judges[0], toxicity.judge):
        assert "MARK-ER-99" in judge.answer_redactor.values
    answer = "MARK-ER-99 panel-header-1 tox-header-2 4539148803436467"
    assert panel.judges[0].answer_redactor.text(mask_found_pii(answer)) == (
        "****R-99 ****er-1 ****er-2 ****6467"
    )


def test_a_marker_rewritten_in_unicode_or_escaped_is_masked_where_it_was_written() -> None:
    marker = "SYSPROMPT-zq81-NEVER-SAY"
    full_width = "".join(chr(ord(c) + 0xFEE0) for c in marker)
    split = "SYS\u200bPROMPT-zq81-NEVER\u2060-SAY"
    escaped = json.dumps(full_width)[1:-1]  # a judge echoing a JSON body
    text = f"a {full_width} b {split} c {escaped} d"
    assert Redactor([marker]).text(text) == "a ****-SAY b ****-SAY c ****-SAY d"


def test_pii_a_judge_quotes_through_rewrites_and_escapes_is_masked() -> None:
    card = "４１１１ １１１１ １１１１ １１１１"
    text = f"You sent {json.dumps(card)}, ssn 078 05 1120, bob(at)example(dot)com, 4111\u200b1111\u200b1111\u200b1111"
    masked = mask_found_pii(text)
    for leaked in ("\\uff14\\uff11", "078 05", "bob(at)", "4111\u200b1111"):
        assert leaked not in masked, leaked
