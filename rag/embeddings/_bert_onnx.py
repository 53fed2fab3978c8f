"""The same BERT encoder + mean pooling as ``rag.embeddings._bert``, as an ONNX graph for onnxruntime.

Built with the ``onnx`` helper API from the very ``model.safetensors`` tensors the numpy forward pass
reads -- no torch, no exported file, no download. onnxruntime then fuses what numpy cannot (GEMM +
bias, exact-erf GELU, LayerNorm) and runs the graph on its own thread pool. Inputs ``input_ids`` and
``attention_mask`` (int64, ``[batch, seq]``); output ``embeddings`` (float32, ``[batch, hidden]``,
mean-pooled over real tokens and L2-normalised, as sentence-transformers does).

Example::

    model = build_model(weights, config)                  # onnx.ModelProto
    session = onnxruntime.InferenceSession(model.SerializeToString())
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ._bert import BertConfig

OPSET = 17  # LayerNormalization


class _Graph:
    """A growing list of nodes and initializers with unique names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(value, name=name))
        return name

    def op(self, kind: str, inputs: list[str], **attrs: Any) -> str:
        self._n += 1
        out = f"{kind.lower()}_{self._n}"
        self.nodes.append(self.helper.make_node(kind, inputs, [out], **attrs))
        return out

    def ops(self, kind: str, inputs: list[str], outputs: int, **attrs: Any) -> list[str]:
        self._n += 1
        outs = [f"{kind.lower()}_{self._n}_{i}" for i in range(outputs)]
        self.nodes.append(self.helper.make_node(kind, inputs, outs, **attrs))
        return outs


def build_model(weights: Mapping[str, np.ndarray], config: BertConfig) -> Any:
    """The encoder + pooling graph as an ``onnx.ModelProto`` (see the module docstring)."""
    from onnx import TensorProto, helper

    g = _Graph()
    f32 = np.float32
    hidden, heads = config.hidden_size, config.num_attention_heads
    head_dim = hidden // heads
    eps = float(config.layer_norm_eps)

    def w(name: str) -> np.ndarray:
        return np.ascontiguousarray(weights[name], dtype=f32)

    def linear(x: str, prefix: str) -> str:
        weight = g.const(prefix + ".w", np.ascontiguousarray(w(prefix + ".weight").T))
        return g.op("Add", [g.op("MatMul", [x, weight]), g.const(prefix + ".b", w(prefix + ".bias"))])

    def norm(x: str, prefix: str) -> str:
        gamma, beta = (
            g.const(prefix + ".g", w(prefix + ".weight")),
            g.const(prefix + ".b", w(prefix + ".bias")),
        )
        return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)

    # Embeddings: word + position + token type 0 (single-segment input), then LayerNorm.
    seq = g.op(
        "Gather", [g.op("Shape", ["input_ids"]), g.const("one_i", np.array(1, dtype=np.int64))], axis=0
    )
    positions = g.op("Range", [g.const("zero_i", np.array(0, dtype=np.int64)), seq, "one_i"])
    words = g.op("Gather", [g.const("word_emb", w("embeddings.word_embeddings.weight")), "input_ids"], axis=0)
    pos = g.op("Gather", [g.const("pos_emb", w("embeddings.position_embeddings.weight")), positions], axis=0)
    token_type = g.const("type_emb", w("embeddings.token_type_embeddings.weight")[0])
    x = norm(g.op("Add", [g.op("Add", [words, pos]), token_type]), "embeddings.LayerNorm")

    # Additive attention mask [batch, 1, 1, seq]: padded keys get float32's minimum.
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    padded = g.op("Sub", [g.const("one_f", np.array(1.0, dtype=f32)), mask])
    bias = g.op("Mul", [padded, g.const("min_f", np.array(np.finfo(f32).min, dtype=f32))])
    bias = g.op("Unsqueeze", [bias, g.const("axes_1_2", np.array([1, 2], dtype=np.int64))])
    split_heads = g.const("heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_heads = g.const("hidden_shape", np.array([0, 0, hidden], dtype=np.int64))
    scale = g.const("scale", np.array(1.0 / np.sqrt(head_dim), dtype=f32))
    inv_sqrt2 = g.const("inv_sqrt2", np.array(1.0 / np.sqrt(2.0), dtype=f32))
    half = g.const("half", np.array(0.5, dtype=f32))

    for layer in range(config.num_hidden_layers):
        p = f"encoder.layer.{layer}"
        # Q, K and V in one GEMM.
        qkv_w = np.concatenate(
            [w(f"{p}.attention.self.{n}.weight").T for n in ("query", "key", "value")], axis=1
        )
        qkv_b = np.concatenate([w(f"{p}.attention.self.{n}.bias") for n in ("query", "key", "value")])
        qkv = g.op(
            "Add",
            [
                g.op("MatMul", [x, g.const(f"{p}.qkv.w", np.ascontiguousarray(qkv_w))]),
                g.const(f"{p}.qkv.b", qkv_b),
            ],
        )
        q, k, v = g.ops(
            "Split", [qkv, g.const(f"{p}.split", np.array([hidden] * 3, dtype=np.int64))], 3, axis=-1
        )
        q = g.op("Transpose", [g.op("Reshape", [q, split_heads])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [k, split_heads])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [v, split_heads])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merge_heads])
        x = norm(
            g.op("Add", [linear(context, f"{p}.attention.output.dense"), x]),
            f"{p}.attention.output.LayerNorm",
        )
        inner = linear(x, f"{p}.intermediate.dense")
        erf = g.op("Erf", [g.op("Mul", [inner, inv_sqrt2])])
        gelu = g.op("Mul", [g.op("Mul", [inner, half]), g.op("Add", [erf, "one_f"])])  # exact GELU
        x = norm(g.op("Add", [linear(gelu, f"{p}.output.dense"), x]), f"{p}.output.LayerNorm")

    # Mean over real tokens, then L2 normalisation.
    mask3 = g.op("Unsqueeze", [mask, g.const("axis_2", np.array([2], dtype=np.int64))])
    axis1 = g.const("axis_1", np.array([1], dtype=np.int64))
    summed = g.op("ReduceSum", [g.op("Mul", [x, mask3]), axis1], keepdims=0)
    counts = g.op(
        "Max", [g.op("ReduceSum", [mask3, axis1], keepdims=0), g.const("tiny", np.array(1e-9, dtype=f32))]
    )
    pooled = g.op("Div", [summed, counts])
    length = g.op("ReduceL2", [pooled], axes=[1], keepdims=1)  # axes is an attribute until opset 18
    length = g.op("Max", [length, g.const("tiny_norm", np.array(1e-12, dtype=f32))])
    g.nodes.append(helper.make_node("Div", [pooled, length], ["embeddings"]))

    graph = helper.make_graph(
        g.nodes,
        "bert_mean_pool",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", hidden])],
        initializer=g.inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
