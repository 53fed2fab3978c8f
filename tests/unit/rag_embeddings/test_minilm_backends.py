"""MiniLMEmbedder's two forward passes -- numpy and onnxruntime (a graph built from the same weights,
no torch) -- both match the committed sentence-transformers reference, and each other."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from suite_settings import require_module

from rag.embeddings.minilm import MiniLMEmbedder
from rag.errors import RagConfigurationError


def require_onnx() -> None:
    """The onnx backend's packages (the minilm-onnx extra, part of all-tests)."""
    require_module("onnx")
    require_module("onnxruntime")


REFERENCE = Path(__file__).resolve().parents[2] / "data" / "minilm_reference.json"


@pytest.fixture(scope="module", params=["numpy", "onnx"])
def embedder(request: pytest.FixtureRequest) -> MiniLMEmbedder:
    if request.param == "onnx":
        require_onnx()
    return MiniLMEmbedder(backend=request.param, batch_size=4, batch_tokens=600)


def test_backend_matches_sentence_transformers(embedder: MiniLMEmbedder) -> None:
    ref = json.loads(REFERENCE.read_text())
    expected = np.array([item["embedding"] for item in ref["items"]], dtype=np.float32)
    got = embedder.embed_array([item["text"] for item in ref["items"]])
    assert embedder._load().backend == embedder.backend
    cosines = (got * expected).sum(axis=1)
    assert cosines.min() > 0.9999, f"{embedder.backend}: min cosine {cosines.min()}"
    assert np.abs(got - expected).max() < 1e-4


def test_backends_agree_on_mixed_lengths() -> None:
    texts = ["short", "a medium sized sentence about vector search " * 3, "long " * 300, "", "x"]
    require_onnx()
    numpy_vectors = MiniLMEmbedder(backend="numpy").embed_array(texts)
    onnx_vectors = MiniLMEmbedder(backend="onnx", batch_tokens=512).embed_array(texts)
    assert np.abs(numpy_vectors - onnx_vectors).max() < 1e-4


def test_bad_options_are_named_errors() -> None:
    with pytest.raises(RagConfigurationError):
        MiniLMEmbedder(backend="torch")  # type: ignore[arg-type]
    with pytest.raises(RagConfigurationError):
        MiniLMEmbedder(batch_tokens=0)
