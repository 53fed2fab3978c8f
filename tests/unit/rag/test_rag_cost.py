"""estimate_model_cost, provider-vs-estimate resolution, and the embeddings span attributes."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rag_helpers import RecordingEmbedder

from rag import MemoryStore, ModelPrice, define_rag, estimate_model_cost, resolve_model_cost
from rag.cost import TokenUsage as Usage


def test_estimate_from_the_price_table() -> None:
    assert estimate_model_cost("text-embedding-3-small", Usage(input_tokens=1_000_000)) == pytest.approx(0.02)
    assert estimate_model_cost(
        "openai:gpt-4o-mini", {"input_tokens": 1000, "output_tokens": 1000}
    ) == pytest.approx((1000 * 0.15 + 1000 * 0.60) / 1e6)
    cached = Usage(input_tokens=1000, cache_read_tokens=400)
    assert estimate_model_cost("gpt-4o-mini", cached) == pytest.approx((600 * 0.15 + 400 * 0.075) / 1e6)


def test_unknown_model_is_none_never_zero() -> None:
    assert estimate_model_cost("my-private-model", Usage(input_tokens=10)) is None
    assert resolve_model_cost("my-private-model", Usage(input_tokens=10)) is None
    assert estimate_model_cost("x", Usage(input_tokens=10), prices={"x": ModelPrice(1.0)}) == pytest.approx(
        1e-5
    )


def test_provider_reported_cost_always_wins() -> None:
    cost = resolve_model_cost("gpt-4o-mini", Usage(input_tokens=1000, cost_usd=0.5))
    assert (cost.usd, cost.source) == (0.5, "provider")
    cost = resolve_model_cost("gpt-4o-mini", Usage(input_tokens=1000))
    assert cost.source == "estimate"


class PricedEmbedder(RecordingEmbedder):
    def __init__(self, model: str, provider_cost: float | None) -> None:
        super().__init__()
        self.model = model
        self.provider_cost = provider_cost
        self.last_usage: Usage | None = None

    def embed_many(self, texts):
        self.last_usage = Usage(input_tokens=10 * len(texts), cost_usd=self.provider_cost)
        return super().embed_many(texts)


@pytest.mark.parametrize(
    ("model", "provider", "expected"),
    [
        ("text-embedding-3-small", None, ("estimate", 10 * 0.02 / 1e6)),
        ("text-embedding-3-small", 0.25, ("provider", 0.25)),
        ("unpriced-model", None, None),
    ],
)
def test_embedding_spans_say_which_cost_they_carry(model, provider, expected) -> None:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    rag = define_rag(embedding=PricedEmbedder(model, provider), store=MemoryStore()).bind(
        tracer=tp.get_tracer("t")
    )
    rag.index("doc", "one. two.")
    rag.retrieve("q")
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["embeddings", "embeddings"]
    attrs = spans[0].attributes
    assert attrs["gen_ai.operation.name"] == "embeddings" and attrs["gen_ai.request.model"] == model
    if expected is None:
        assert "lunora.cost.usd" not in attrs and "lunora.cost.source" not in attrs
    else:
        assert attrs["lunora.cost.source"] == expected[0]
        assert attrs["lunora.cost.usd"] == pytest.approx(expected[1])
