"""The shipped authenticators: the bearer-token table and the JWT verifier (key and JWKS)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from lunora_jobs.api import (
    AnyOf,
    BearerTokenAuthenticator,
    Identity,
    JWTAuthenticator,
    authenticator_from_settings,
    token_digest,
)
from lunora_jobs.config import Settings
from lunora_jobs.errors import ConfigurationError


def test_token_table_accepts_its_tokens_only(tmp_path: Path) -> None:
    ops = Identity("ops", admin=True)
    auth = BearerTokenAuthenticator({"tok-a": "alice"}, digests={token_digest("tok-o"): ops})
    assert auth.authenticate("tok-a") == Identity("alice")
    assert auth.authenticate("tok-o") == Identity("ops", admin=True)
    assert auth.authenticate("tok-a ") is None and auth.authenticate("") is None
    table = tmp_path / "tokens.json"
    table.write_text(json.dumps([{"subject": "bob", "token_sha256": token_digest("tok-b")}]))
    assert BearerTokenAuthenticator.from_file(table).authenticate("tok-b") == Identity("bob")
    with pytest.raises(ConfigurationError, match="empty"):
        BearerTokenAuthenticator({})
    table.write_text(json.dumps([{"token": "x"}]))
    with pytest.raises(ConfigurationError, match="subject"):
        BearerTokenAuthenticator.from_file(table)


def test_an_empty_subject_is_never_an_identity() -> None:
    with pytest.raises(Exception, match="non-empty subject"):
        Identity("  ")


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _public_pem(key: rsa.RSAPrivateKey) -> str:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def _token(key: Any, alg: str = "RS256", **claims: Any) -> str:
    body = {"sub": "alice", "exp": int(time.time()) + 300, "iss": "https://idp.test", "aud": "lunora",
            **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=alg,
                      headers={"kid": "k1"})


def test_jwt_verifier_checks_signature_expiry_issuer_audience(rsa_key: rsa.RSAPrivateKey) -> None:
    auth = JWTAuthenticator(key=_public_pem(rsa_key), algorithms=["RS256"], issuer="https://idp.test",
                            audience="lunora")
    assert auth.authenticate(_token(rsa_key)) == Identity("alice")
    assert auth.authenticate(_token(rsa_key, scope="read lunora:admin")) == Identity("alice", admin=True)
    assert auth.authenticate(_token(rsa_key, exp=int(time.time()) - 3600)) is None  # expired
    assert auth.authenticate(_token(rsa_key, exp=None)) is None  # exp is required
    assert auth.authenticate(_token(rsa_key, aud="other")) is None
    assert auth.authenticate(_token(rsa_key, iss="https://evil.test")) is None
    assert auth.authenticate(_token(rsa_key, sub="")) is None
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert auth.authenticate(_token(other)) is None  # signed by someone else
    # alg=none and HS256 keyed with the public key (the classic confusion) are refused.
    assert auth.authenticate(_token(None, alg="none")) is None
    with pytest.raises(ConfigurationError, match="none"):
        JWTAuthenticator(key="s", algorithms=["none"])


def test_jwt_verifier_with_a_shared_secret() -> None:
    auth = JWTAuthenticator(key="a-long-shared-secret-of-32-bytes!", algorithms=["HS256"])
    token = jwt.encode({"sub": "u7", "exp": int(time.time()) + 60}, "a-long-shared-secret-of-32-bytes!",
                       algorithm="HS256")
    assert auth.authenticate(token) == Identity("u7")
    assert auth.authenticate(token + "x") is None


@pytest.fixture
def jwks_server(rsa_key: rsa.RSAPrivateKey) -> Iterator[str]:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key.public_key()))
    body = json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    finally:
        server.shutdown()
        server.server_close()


def test_jwt_verifier_with_a_jwks_url(rsa_key: rsa.RSAPrivateKey, jwks_server: str) -> None:
    auth = JWTAuthenticator(jwks_url=jwks_server, algorithms=["RS256"], audience="lunora")
    assert auth.authenticate(_token(rsa_key)) == Identity("alice")
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert auth.authenticate(_token(other)) is None


def test_settings_build_the_authenticators_and_fail_closed(
    tmp_path: Path, rsa_key: rsa.RSAPrivateKey
) -> None:
    with pytest.raises(ConfigurationError, match="no authenticator"):
        authenticator_from_settings(Settings())
    table = tmp_path / "t.json"
    table.write_text(json.dumps([{"subject": "bob", "token": "tok-b"}]))
    both = authenticator_from_settings(Settings(api_tokens_file=table, api_jwt_key=_public_pem(rsa_key),
                                                api_jwt_audience="lunora"))
    assert isinstance(both, AnyOf)
    assert both.authenticate("tok-b") == Identity("bob")
    assert both.authenticate(_token(rsa_key)) == Identity("alice")


def test_a_tenant_comes_from_the_token_table_or_a_required_jwt_claim(
    tmp_path: Path, rsa_key: rsa.RSAPrivateKey
) -> None:
    table = tmp_path / "t.json"
    table.write_text(json.dumps([{"subject": "bob", "token": "tok-b", "tenant": "acme"},
                                 {"subject": "ops", "token": "tok-o", "admin": True}]))
    auth = BearerTokenAuthenticator.from_file(table)
    assert auth.authenticate("tok-b") == Identity("bob", tenant="acme")
    assert auth.authenticate("tok-o") == Identity("ops", admin=True)
    table.write_text(json.dumps([{"subject": "bob", "token": "tok-b", "tenant": ""}]))
    with pytest.raises(ConfigurationError, match="tenant"):
        BearerTokenAuthenticator.from_file(table)
    with pytest.raises(Exception, match="tenant"):
        Identity("bob", tenant=" ")
    settings = Settings(api_jwt_key=_public_pem(rsa_key), api_jwt_audience="lunora",
                        api_jwt_tenant_claim="org")
    jwt_auth = authenticator_from_settings(settings)
    assert jwt_auth.authenticate(_token(rsa_key, org="acme")) == Identity("alice", tenant="acme")
    # The configuration requires a tenant: a token without one (or an empty one) proves nothing.
    assert jwt_auth.authenticate(_token(rsa_key)) is None
    assert jwt_auth.authenticate(_token(rsa_key, org="")) is None
    assert jwt_auth.authenticate(_token(rsa_key, org=["acme"])) is None
    plain = JWTAuthenticator(key=_public_pem(rsa_key), audience="lunora")
    assert plain.authenticate(_token(rsa_key, org="acme")) == Identity("alice")  # no claim configured


def test_lunora_api_without_an_authenticator_is_one_line_and_the_fix(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "LUNORA_APP": "lunora_jobs.example:app", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "lunora_jobs.cli", "api", "--port", "1"], env=env,
                          capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "LUNORA_API_TOKENS_FILE" in lines[0] and "--debug" in lines[0]
