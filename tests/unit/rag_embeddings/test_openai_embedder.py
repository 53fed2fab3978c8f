"""OpenAIEmbedder against a real local HTTP server speaking the /v1/embeddings wire format."""

from __future__ import annotations

import openai
import pytest

from rag.cost import ModelCost, ModelPrice
from rag.cost import TokenUsage as Usage
from rag.embeddings.base import Embedder
from rag.embeddings.openai import OpenAIEmbedder
from rag.errors import EmbeddingInputError, EmbeddingResponseError, RagConfigurationError

from .fake_openai_server import expected_vector, running_server


def _embedder(base_url: str, **kwargs: object) -> OpenAIEmbedder:
    kwargs.setdefault("max_retries", 0)
    return OpenAIEmbedder("text-embedding-3-small", api_key="sk-test", base_url=base_url, **kwargs)  # type: ignore[arg-type]


def test_round_trip_in_input_order_over_base64_transport() -> None:
    texts = ["alpha", "beta gamma", "delta", "alpha"]
    with running_server() as server:
        embedder = _embedder(server.base_url)
        vectors = embedder.embed_many(texts)
    assert isinstance(embedder, Embedder)
    for text, vec in zip(texts, vectors, strict=True):
        assert vec == pytest.approx(expected_vector(text, 8), abs=1e-7)
    assert len(server.requests) == 1
    assert server.requests[0]["input"] == texts and server.requests[0]["model"] == "text-embedding-3-small"
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    assert embedder.dimensions == 8


def test_dimensions_are_requested_and_checked() -> None:
    with running_server() as server:
        embedder = _embedder(server.base_url, dimensions=16)
        [vec] = embedder.embed_many(["shortened"])
        assert len(vec) == 16 and server.requests[0]["dimensions"] == 16
        learned = _embedder(server.base_url)
        learned.embed_many(["x"])
        assert learned.dimensions == 8
        server.default_dims = 12  # the model behind the endpoint changed width
        with pytest.raises(EmbeddingResponseError, match="widths"):
            learned.embed_many(["y"])


def test_batches_respect_item_cap_and_token_budget() -> None:
    texts = [f"text number {i}" for i in range(7)]
    with running_server() as server:
        vectors = _embedder(server.base_url, max_batch_size=3).embed_many(texts)
        assert [len(r["input"]) for r in server.requests] == [3, 3, 1]
        assert vectors == [pytest.approx(expected_vector(t, 8), abs=1e-7) for t in texts]
        server.requests.clear()
        # Injected counter: 3 tokens each, budget 7 -> pairs.
        by_words = _embedder(server.base_url, count_tokens=lambda t: len(t.split()), max_batch_tokens=7)
        by_words.embed_many(texts)
        assert [len(r["input"]) for r in server.requests] == [2, 2, 2, 1]
        server.requests.clear()
        # Default bound is UTF-8 bytes (an upper bound on BPE tokens): "é" is 2 bytes.
        _embedder(server.base_url, max_batch_tokens=4).embed_many(["éé", "a", "éé"])
        assert [r["input"] for r in server.requests] == [["éé"], ["a"], ["éé"]]


def _assert_cost(cost: ModelCost | None, usd: float, source: str) -> None:
    assert cost is not None and cost.source == source and cost.usd == pytest.approx(usd)


def test_usage_and_cost_provider_wins_over_estimate() -> None:
    with running_server(report_cost=0.00042) as server:
        embedder = _embedder(server.base_url, max_batch_size=1)
        assert embedder.last_cost() is None
        embedder.embed_many(["one two", "three"])
        assert embedder.last_usage is not None and embedder.last_usage.input_tokens == 3
        assert embedder.last_usage.cost_usd == pytest.approx(0.00084)
        _assert_cost(embedder.last_cost(), 0.00084, "provider")
        embedder.embed_many(["four"])
        assert embedder.total_usage.input_tokens == 4
    with running_server() as server:
        plain = _embedder(server.base_url)
        plain.embed_many(["one two three"])
        assert plain.last_usage == Usage(input_tokens=3)  # no provider cost: none invented
        _assert_cost(plain.last_cost(), 3 * 0.02 / 1_000_000, "estimate")
        custom = _embedder(server.base_url, prices={"text-embedding-3-small": ModelPrice(1.0)})
        custom.embed_many(["one two"])
        _assert_cost(custom.last_cost(), 2 / 1_000_000, "estimate")
        unpriced = OpenAIEmbedder("my-private-model", api_key="k", base_url=server.base_url, max_retries=0)
        unpriced.embed_many(["x"])
        assert unpriced.last_cost() is None  # unknown model: None, never 0


def test_empty_input_is_a_named_error_before_any_request() -> None:
    with running_server() as server:
        with pytest.raises(EmbeddingInputError, match="empty"):
            _embedder(server.base_url).embed_many(["fine", "  "])
        assert server.requests == []
        assert _embedder(server.base_url).embed_many([]) == []
        assert server.requests == []


def test_short_response_is_refused() -> None:
    with running_server(drop_last=True) as server, pytest.raises(EmbeddingResponseError, match="asked for 2"):
        _embedder(server.base_url).embed_many(["a", "b"])


def test_provider_errors_surface_and_retries_recover() -> None:
    with running_server(fail_status=[400]) as server, pytest.raises(openai.BadRequestError):
        _embedder(server.base_url).embed_many(["a"])
    with running_server(fail_status=[503]) as server:
        # The SDK retries a 503 (short backoff) and the second attempt succeeds.
        [vec] = _embedder(server.base_url, max_retries=1).embed_many(["a"])
        assert vec == pytest.approx(expected_vector("a", 8), abs=1e-7)
        assert len(server.requests) == 2


def test_configuration_from_env_and_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(RagConfigurationError, match="OPENAI_API_KEY"):
        OpenAIEmbedder()
    with running_server() as server:
        # A compatible local server needs no key; the base URL may come from the environment.
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        [vec] = OpenAIEmbedder("nomic-embed-text", max_retries=0).embed_many(["hello"])
        assert vec == pytest.approx(expected_vector("hello", 8), abs=1e-7)
        assert server.requests[0]["model"] == "nomic-embed-text"
    with pytest.raises(RagConfigurationError):
        OpenAIEmbedder(max_batch_size=0, api_key="k")
