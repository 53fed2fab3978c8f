"""A numpy forward pass of a BERT encoder (the architecture behind all-MiniLM-L6-v2).

It reproduces Hugging Face's ``BertModel`` in float32 without torch: token + position + type
embeddings, then ``num_hidden_layers`` post-LayerNorm blocks of multi-head self-attention and a GELU
feed-forward. Only inference, only the encoder (the pooler is unused by sentence-transformers' mean
pooling). The weights are the ``model.safetensors`` tensors, keyed by their Hugging Face names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class BertConfig:
    """The few ``config.json`` fields the forward pass needs."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    layer_norm_eps: float = 1e-12

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> BertConfig:
        """Read a Hugging Face ``config.json`` dict; refuses activations we do not implement."""
        if data.get("hidden_act", "gelu") != "gelu":
            act = data.get("hidden_act")
            raise ValueError(f"unsupported hidden_act {act!r}; only exact 'gelu' is implemented")
        return cls(
            hidden_size=int(str(data["hidden_size"])),
            num_hidden_layers=int(str(data["num_hidden_layers"])),
            num_attention_heads=int(str(data["num_attention_heads"])),
            layer_norm_eps=float(str(data.get("layer_norm_eps", 1e-12))),
        )


def _erf(x: Array) -> Array:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32 resolution near 1).

    numpy has no erf and scipy is not a dependency; the tanh approximation of GELU would drift
    from the exact-erf GELU the model was trained with. Computed in place: the FFN activations are
    the largest arrays of the forward pass, and temporaries dominated its cost.
    """
    a = np.abs(x)
    t = np.multiply(a, np.float32(0.3275911))
    t += 1.0
    np.reciprocal(t, out=t)
    poly = np.multiply(t, np.float32(1.061405429))
    for coef in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(coef)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(np.float32(1.0), poly, out=poly)
    poly *= np.sign(x)
    return poly


def gelu(x: Array) -> Array:
    """Exact GELU, ``x * Φ(x)``, as BERT's ``hidden_act="gelu"``."""
    phi = _erf(x * np.float32(1.0 / np.sqrt(2.0)))
    phi += 1.0
    phi *= 0.5
    phi *= x
    return phi


def layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    """LayerNorm over the last axis (biased variance, like torch)."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: Array = ((x - mean) / np.sqrt(var + np.float32(eps)) * weight + bias).astype(np.float32)
    return out


class BertEncoder:
    """Runs the encoder over padded token batches. Read-only after construction, so thread-safe."""

    def __init__(self, weights: Mapping[str, np.ndarray], config: BertConfig) -> None:
        self.config = config
        # Transpose linear weights once so every call is a plain ``x @ W``.
        self._w: dict[str, Array] = {}
        for name, tensor in weights.items():
            if name.endswith("position_ids"):
                continue
            arr = np.ascontiguousarray(tensor, dtype=np.float32)
            if name.endswith(".weight") and arr.ndim == 2 and "embeddings" not in name:
                arr = np.ascontiguousarray(arr.T)
            self._w[name] = arr

    def _linear(self, x: Array, prefix: str) -> Array:
        # One 2-D GEMM: numpy's stacked 3-D @ 2-D matmul runs ~5x slower than BLAS on the flat view.
        weight = self._w[prefix + ".weight"]
        flat = x.reshape(-1, x.shape[-1]) @ weight + self._w[prefix + ".bias"]
        return flat.reshape(*x.shape[:-1], weight.shape[1])

    def _norm(self, x: Array, prefix: str) -> Array:
        eps = self.config.layer_norm_eps
        return layer_norm(x, self._w[prefix + ".weight"], self._w[prefix + ".bias"], eps)

    def __call__(self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]) -> Array:
        """Last hidden states, shape ``(batch, seq, hidden)``, for ids/mask of shape ``(batch, seq)``."""
        batch, seq = input_ids.shape
        w = self._w
        # Single-segment input: token_type_ids are all zero, as sentence-transformers passes them.
        x = (
            w["embeddings.word_embeddings.weight"][input_ids]
            + w["embeddings.position_embeddings.weight"][np.arange(seq)][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = self._norm(x.astype(np.float32), "embeddings.LayerNorm")
        # Additive mask: padded keys get the dtype's minimum, so softmax gives them zero weight.
        padded = 1.0 - attention_mask[:, None, None, :].astype(np.float32)
        bias = (padded * np.finfo(np.float32).min).astype(np.float32)
        for layer in range(self.config.num_hidden_layers):
            x = self._block(x, bias, f"encoder.layer.{layer}", batch, seq)
        return x

    def _block(self, x: Array, bias: Array, p: str, batch: int, seq: int) -> Array:
        heads = self.config.num_attention_heads
        head_dim = self.config.hidden_size // heads

        def split(t: Array) -> Array:
            return t.reshape(batch, seq, heads, head_dim).transpose(0, 2, 1, 3)

        q = split(self._linear(x, f"{p}.attention.self.query"))
        k = split(self._linear(x, f"{p}.attention.self.key"))
        v = split(self._linear(x, f"{p}.attention.self.value"))
        scores = (q @ k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(head_dim)) + bias
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, heads * head_dim)
        attended = self._linear(context, f"{p}.attention.output.dense") + x
        x = self._norm(attended, f"{p}.attention.output.LayerNorm")
        hidden = gelu(self._linear(x, f"{p}.intermediate.dense"))
        return self._norm(self._linear(hidden, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")


def mean_pool_normalize(hidden: Array, attention_mask: NDArray[np.int64]) -> Array:
    """sentence-transformers' mean pooling over real tokens, then L2 normalisation."""
    mask = attention_mask[:, :, None].astype(np.float32)
    summed = (hidden * mask).sum(axis=1)
    counts = np.clip(mask.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    out: Array = (pooled / norms).astype(np.float32)
    return out
