"""Embedders: texts in, vectors out.

- ``OpenAIEmbedder`` -- OpenAI or any OpenAI-compatible ``/v1/embeddings`` endpoint (extra ``openai``).
- ``MiniLMEmbedder`` -- offline all-MiniLM-L6-v2, numpy forward pass, no torch (extra ``minilm``).
- ``HashingEmbedder`` -- deterministic feature hashing for unit tests; NOT semantic.

Importing this package loads no optional dependency; each embedder imports its own on first use.
"""

from rag.embeddings.base import Embedder
from rag.embeddings.hashing import HashingEmbedder
from rag.embeddings.minilm import MiniLMEmbedder
from rag.embeddings.openai import OpenAIEmbedder

__all__ = ["Embedder", "HashingEmbedder", "MiniLMEmbedder", "OpenAIEmbedder"]
