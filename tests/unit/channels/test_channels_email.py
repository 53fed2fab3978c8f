"""Inbound email: parsing, trusted verdicts, our own DKIM check, limits, routing, bounces, SMTP."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from typing import Any

import pytest
from channels_mail import TRUSTED, dkim_sign, dns_txt, message, passing
from channels_smtp import serving
from test_channels_endpoint import RecordingStarter

from channels.email import (
    EmailConfig,
    EmailLimits,
    EmailRejected,
    EmailRouter,
    InboundEmail,
    parse_email,
    start_smtp_server,
)


def test_parse_fields_and_trusted_verdicts() -> None:
    raw = message(auth=[passing()], attachments=2, message_id="<m1@example.org>")
    email = parse_email(raw, authserv_id=TRUSTED)
    assert email.from_address == "alice@example.org" and email.to == ("support@ours.test",)
    assert email.subject == "Help with my order" and email.text is not None and "It broke." in email.text
    assert email.message_id == "<m1@example.org>" and len(email.attachments) == 2
    assert (email.authentication.dkim, email.authentication.spf, email.authentication.dmarc) == ("pass",) * 3
    assert email.verified_sender == "alice@example.org"


def test_results_from_another_authserv_id_are_ignored() -> None:
    email = parse_email(message(auth=[passing("mx.attacker.example")]), authserv_id=TRUSTED)
    assert email.authentication.dkim == "none" and email.verified_sender is None


def test_only_the_topmost_trusted_header_counts() -> None:
    # our MTA prepends its verdict; a forged "pass" with our id further down (inside the sender's
    # headers) must not override it
    ours = f"{TRUSTED}; dkim=fail header.d=example.org; spf=fail; dmarc=fail"
    email = parse_email(message(auth=[ours, passing()]), authserv_id=TRUSTED)
    assert email.authentication.dmarc == "fail" and email.verified_sender is None


def test_nothing_is_trusted_without_an_authserv_id() -> None:
    assert parse_email(message(auth=[passing()]), authserv_id=None).verified_sender is None


def test_dkim_alignment_without_dmarc() -> None:
    aligned = parse_email(message(auth=[f"{TRUSTED}; dkim=pass header.d=example.org"]), authserv_id=TRUSTED)
    assert aligned.verified_sender == "alice@example.org"
    other = parse_email(message(auth=[f"{TRUSTED}; dkim=pass header.d=evil.example"]), authserv_id=TRUSTED)
    assert other.authentication.dkim == "pass" and other.verified_sender is None


def test_malformed_authentication_results_are_ignored() -> None:
    email = parse_email(message(auth=[f"{TRUSTED}; ;;; ===", passing()]), authserv_id=TRUSTED)
    assert email.verified_sender == "alice@example.org"  # the unparseable one is skipped


def test_own_dkim_check_with_dkimpy() -> None:
    signed = dkim_sign(message())
    email = parse_email(signed, authserv_id=None, dkim=True, dns_txt=dns_txt)
    assert email.authentication.dkim == "pass" and email.authentication.source == "dkimpy"
    assert email.verified_sender == "alice@example.org"
    tampered = signed.replace(b"It broke.", b"It works.")
    bad = parse_email(tampered, authserv_id=None, dkim=True, dns_txt=dns_txt)
    assert bad.authentication.dkim == "fail" and bad.verified_sender is None
    unsigned = parse_email(message(), authserv_id=None, dkim=True, dns_txt=dns_txt)
    assert unsigned.authentication.dkim == "none"


def test_limits() -> None:
    limits = EmailLimits(max_message_bytes=50_000, max_attachments=3, max_decoded_bytes=20_000)
    parse_email(message(attachments=3), authserv_id=None, limits=limits)
    with pytest.raises(EmailRejected):
        parse_email(message(attachments=4), authserv_id=None, limits=limits)
    with pytest.raises(EmailRejected):
        parse_email(message(attachments=2, attachment_size=12_000), authserv_id=None, limits=limits)
    with pytest.raises(EmailRejected):
        parse_email(message(text="x" * 60_000), authserv_id=None, limits=limits)


def test_default_limits_match_the_issue() -> None:
    limits = EmailLimits()
    assert (limits.max_message_bytes, limits.max_attachments, limits.max_decoded_bytes) == (
        10 * 1024 * 1024,
        20,
        25 * 1024 * 1024,
    )


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00\xff" * 100,
        b"From: \r\n\r\n",
        b"Subject: =?utf-8?q?broken\r\n\r\nx",
        b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nnope',
    ],
)
def test_hostile_input_parses_or_is_rejected_never_crashes(raw: bytes) -> None:
    try:
        email = parse_email(raw, authserv_id=TRUSTED)
    except EmailRejected:
        return
    assert email.verified_sender is None


def _support_mapper(claimed: list[InboundEmail]) -> Any:
    def on_email(email: InboundEmail) -> Any:
        if email.authentication.dkim != "pass" or email.authentication.spf != "pass":
            return None
        claimed.append(email)
        return {"input": f"{email.subject}\n\n{email.text}"}

    return on_email


def test_router_first_claim_wins_and_unclaimed_is_dropped() -> None:
    starter = RecordingStarter()
    claimed: list[InboundEmail] = []
    router = EmailRouter(
        [("picky", lambda e: None), ("support", _support_mapper(claimed)), ("never", lambda e: "nope")],
        starter,
        EmailConfig(TRUSTED),
    )
    outcome = router.receive(message(auth=[passing()], message_id="<a@example.org>"))
    assert outcome.status == "claimed" and outcome.agent == "support"
    (run,) = starter.runs.values()
    assert run.owner == "email:alice@example.org" and run.input.startswith("Help with my order")
    assert run.dedupe_key == "email:email:alice@example.org:<a@example.org>"
    assert run.reply is not None and run.reply.address["to"] == "alice@example.org"
    assert run.reply.address["subject"] == "Re: Help with my order"
    again = router.receive(message(auth=[passing()], message_id="<a@example.org>"))
    assert again.status == "duplicate"
    # a forged verdict: "support" declines it, "never" claims it but no verified owner exists: dropped
    forged = router.receive(message(auth=[passing("mx.attacker.example")]))
    assert forged.status == "dropped" and len(starter.runs) == 1


def test_auto_replies_are_dropped() -> None:
    starter = RecordingStarter()
    router = EmailRouter([("support", _support_mapper([]))], starter, EmailConfig(TRUSTED))
    raw = message(auth=[passing()]).replace(b"Subject:", b"Auto-Submitted: auto-replied\r\nSubject:", 1)
    assert router.receive(raw).status == "dropped" and starter.calls == 0


def test_unverified_message_without_owner_is_dropped() -> None:
    starter = RecordingStarter()
    router = EmailRouter([("open", lambda e: "hi")], starter, EmailConfig(TRUSTED))
    assert router.receive(message()).status == "dropped" and starter.calls == 0


def test_mapper_or_start_failure_is_a_rejection() -> None:
    def broken(e: InboundEmail) -> Any:
        raise RuntimeError("db password is hunter2")

    with pytest.raises(EmailRejected) as info:
        EmailRouter([("x", broken)], RecordingStarter(), EmailConfig(TRUSTED)).receive(message())
    assert "hunter2" not in str(info.value)
    starter = RecordingStarter()
    starter.conflict = True
    with pytest.raises(EmailRejected):
        EmailRouter([("x", _support_mapper([]))], starter, EmailConfig(TRUSTED)).receive(
            message(auth=[passing()])
        )


@pytest.fixture
def smtp_server() -> Iterator[tuple[int, RecordingStarter, list[InboundEmail]]]:
    """The aiosmtpd listener on a free loopback port, in a loop of its own thread."""
    starter = RecordingStarter()
    claimed: list[InboundEmail] = []
    config = EmailConfig(TRUSTED, EmailLimits(max_message_bytes=200_000))
    router = EmailRouter([("support", _support_mapper(claimed))], starter, config)
    with serving(lambda: start_smtp_server(router, "127.0.0.1", 0)) as port:
        yield port, starter, claimed


def test_smtp_session_claims_authenticated_and_drops_forged(
    smtp_server: tuple[int, RecordingStarter, list[InboundEmail]],
) -> None:
    port, starter, claimed = smtp_server
    with smtplib.SMTP("127.0.0.1", port, timeout=10) as smtp:
        smtp.sendmail("alice@example.org", ["support@ours.test"], message(auth=[passing()]))
        smtp.sendmail("alice@example.org", ["support@ours.test"], message(auth=[passing("mx.evil.example")]))
    assert len(claimed) == 1 and len(starter.runs) == 1
    assert claimed[0].envelope_from == "alice@example.org"


def test_smtp_bounces_with_a_generic_reason(
    smtp_server: tuple[int, RecordingStarter, list[InboundEmail]],
) -> None:
    port, starter, _ = smtp_server
    starter.conflict = True
    with smtplib.SMTP("127.0.0.1", port, timeout=10) as smtp, pytest.raises(smtplib.SMTPDataError) as info:
        smtp.sendmail("alice@example.org", ["support@ours.test"], message(auth=[passing()]))
    assert info.value.smtp_code == 554 and info.value.smtp_error == b"5.6.0 Message not accepted"
    with smtplib.SMTP("127.0.0.1", port, timeout=10) as smtp, pytest.raises(smtplib.SMTPException) as big:
        smtp.sendmail("alice@example.org", ["support@ours.test"], message(text="x" * 300_000))
    assert "552" in str(big.value)
