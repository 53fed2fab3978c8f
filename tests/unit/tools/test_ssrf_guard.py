"""The browser's SSRF guard decides on every form of a non-public address (no request is made here:
names resolve through a stub, or through /etc/hosts for ``localhost``)."""

from __future__ import annotations

import pytest

from lunora_jobs.toolbox.browser.guard import check_url, parse_host

PUBLIC = "93.184.216.34"


def stub(table: dict[str, list[str]]):
    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]
    return resolve


RESOLVER = stub({"rebind.example": ["127.0.0.1"], "mixed.example": [PUBLIC, "10.0.0.7"],
                 "public.example": [PUBLIC], "meta.example": ["169.254.169.254"]})

REFUSED = [
    "http://127.0.0.1/", "http://127.0.0.1:8080/admin", "https://127.0.0.2/",
    "http://10.0.0.1/", "http://10.255.255.255/", "http://172.16.0.1/", "http://172.31.255.254/",
    "http://192.168.0.1/", "http://192.168.255.254/", "http://169.254.169.254/latest/meta-data/",
    "http://[::1]/", "http://[::1]:9000/", "http://0.0.0.0/", "http://0/", "http://[::]/",
    "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://[::ffff:10.0.0.1]/",
    "http://2130706433/", "http://0x7f000001/", "http://0x7F.0.0.1/", "http://0177.0.0.1/", "http://127.1/",
    "http://017700000001/", "http://3232235521/",  # 192.168.0.1 as a decimal
    "http://localhost/", "http://localhost.:8000/", "http://LOCALHOST/",
    "http://rebind.example/", "http://mixed.example/", "http://meta.example/",
    "http://100.64.0.1/", "http://[fe80::1]/", "http://[fc00::1]/", "http://[fd12:3456::1]/",
    "http://224.0.0.1/", "http://239.255.255.250/", "http://[ff02::1]/", "http://240.0.0.1/",
    "http://255.255.255.255/", "http://192.0.2.1/", "http://198.18.0.1/",
    "http://[64:ff9b::7f00:1]/", "http://[2002:7f00:1::]/", "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
    "file:///etc/passwd", "ftp://example.com/", "gopher://127.0.0.1/", "javascript:alert(1)",
    "http://nowhere.example/", "http://user@127.0.0.1/", "http:///path",
]


@pytest.mark.parametrize("url", REFUSED)
def test_non_public_targets_are_refused(url: str) -> None:
    decision = check_url(url, resolver=RESOLVER)
    assert not decision.allowed and decision.reason and not decision.address, decision


def test_a_public_target_is_allowed_at_the_address_checked() -> None:
    assert check_url(f"http://{PUBLIC}/", resolver=RESOLVER).address == PUBLIC
    decision = check_url("https://public.example/page?q=1", resolver=RESOLVER)
    assert (decision.allowed, decision.host, decision.port, decision.address) == (
        True, "public.example", 443, PUBLIC)


def test_the_allowlist_admits_a_host_or_one_port_of_it() -> None:
    assert check_url("http://127.0.0.1:8123/", allow=["127.0.0.1:8123"]).allowed
    assert not check_url("http://127.0.0.1:8124/", allow=["127.0.0.1:8123"]).allowed
    admitted = check_url("http://rebind.example/", allow=["rebind.example"], resolver=RESOLVER)
    assert admitted.address == "127.0.0.1"
    assert not check_url("http://2130706433:8124/", allow=["127.0.0.1:8123"]).allowed


def test_host_forms_parse_like_a_browser() -> None:
    forms = ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "127.0.1", "0x7f.1", "[::ffff:127.0.0.1]"]
    assert {str(parse_host(f)) for f in forms[:-1]} == {"127.0.0.1"}
    assert parse_host("example.com") is None and parse_host("1.2.3.4.5") is None
    assert parse_host("256.1.1.1") is None  # out of range: a browser refuses the URL
