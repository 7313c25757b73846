"""Secret redaction: planted secrets never reach the output, and events keep their structure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

import normalize
from helpers import capture_files, convert_records, protocol_of, records_of
from normalize import Message
from normalize._redact import Redactor

SECRETS = {
    "anthropic-key": "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA",
    "openai-key": "sk-proj-AbCdEfGhIjKlMnOpQrStUv0123456789",
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
    "bearer-token": "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
    "private-key": "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAA\\n-----END OPENSSH PRIVATE KEY-----",
    "env-secret": "DATABASE_PASSWORD=correct-horse-battery",
}
SECRET_VALUES = [
    "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA",
    "sk-proj-AbCdEfGhIjKlMnOpQrStUv0123456789",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
    "eyJhbGciOiJIUzI1NiJ9.payload.sig",
    "b3BlbnNzaC1rZXktdjEAAAAA",
    "correct-horse-battery",
]


def shape(value: Any) -> Any:
    """The structure of a JSON value: keys and types, strings blanked."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def plant(data: bytes) -> bytes:
    """Every secret, inserted at the start of the first string values of a native message."""
    out = data
    for secret in SECRETS.values():
        at = out.find(b'":"')
        if at < 0:
            return out
        out = out[: at + 3] + secret.encode() + b" " + out[at + 3 :]
    return out


def one_capture_per_protocol() -> list[Path]:
    seen: dict[str, Path] = {}
    for cap in capture_files():
        seen.setdefault(protocol_of(cap), cap)
    return sorted(seen.values())


@pytest.mark.parametrize("capture", one_capture_per_protocol(), ids=protocol_of)
def test_planted_secrets_are_removed_from_bodies_and_payloads_in_every_protocol(capture: Path) -> None:
    planted = [
        msgspec.structs.replace(r, data=plant(r.data)) if isinstance(r, Message) else r for r in records_of([capture])
    ]
    events = convert_records(planted, protocol_of(capture))
    redactor = Redactor()
    plain = [normalize.encode(e) for e in events]
    scrubbed = [redactor.redact(line) for line in plain]
    assert any(s.encode() in line for line in plain for s in SECRET_VALUES), "the capture carried no secret"
    for line in scrubbed:
        for secret in SECRET_VALUES:
            assert secret.encode() not in line
    for before, after in zip(plain, scrubbed, strict=True):
        assert shape(msgspec.json.decode(after)) == shape(msgspec.json.decode(before))
    assert set(redactor.counts) == set(SECRETS)
    assert sum(redactor.counts.values()) == sum(line.count(b"[REDACTED:") for line in scrubbed)


def test_redaction_is_idempotent_and_leaves_ordinary_text_alone() -> None:
    r = Redactor()
    ordinary = b'{"text":"the desk-organizer-and-more-stuff task; skip-this-long-identifier-now","KEYBOARD":"us"}'
    assert r.redact(ordinary) == ordinary
    once = r.redact(b'{"env":{"GH_TOKEN":"abc123def","cmd":"AWS_SECRET=xyz12345 run"}}')
    assert once == b'{"env":{"GH_TOKEN":"[REDACTED:env-secret]","cmd":"AWS_SECRET=[REDACTED:env-secret] run"}}'
    assert r.redact(once) == once
    assert r.summary() == "2 env-secret"
