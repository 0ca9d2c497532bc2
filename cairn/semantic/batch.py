"""Many prompts at once, for benchmarks and fitting: the similarities the hook would get, without the daemon.

`similarities_for(index_file, prompts)` gives, for each prompt, what `cairn.hot.semantic.similarities` gives the
hook for it (the same encoder, vectors and rule), encoding the prompts in batches. Prompt vectors can be cached in a
folder (`cache_dir`), keyed by the model and the prompts, so a second run over a suite encodes nothing.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cairn.semantic import encoder as enc
from cairn.semantic import vectors
from cairn.semantic.daemon import similarities

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def prompt_vectors(
    prompts: Sequence[str],
    *,
    encoder: enc.Encoder | None = None,
    cache_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> npt.NDArray[np.float32]:
    """Unit vectors of `prompts` (one row each), from `cache_dir` when it holds them; `progress(prompts done,
    prompts)` hears of those encoded."""
    import numpy as np

    cached: Path | None = None
    if cache_dir is not None:
        digest = hashlib.sha256(enc.MODEL.encode())
        for prompt in prompts:
            digest.update(enc.prompt_text(prompt).encode("utf-8", "surrogatepass") + b"\0")
        cached = cache_dir / f"prompts-{digest.hexdigest()[:24]}.npy"
        if cached.is_file():
            matrix: npt.NDArray[np.float32] = np.load(cached, allow_pickle=False)
            if matrix.shape == (len(prompts), enc.DIM):
                return matrix
    if progress is not None:
        progress(0, len(prompts))  # drawn before the encoder loads (seconds on a busy machine)
    encoder = encoder or enc.Encoder()
    done, lock = 0, threading.Lock()

    def told(n: int) -> None:  # from the encoder's threads: one at a time on the bar
        nonlocal done
        with lock:
            done += n
            if progress is not None:
                progress(done, len(prompts))

    parts = [encoder.queries(prompts[i : i + 256], progress=told) for i in range(0, len(prompts), 256)]
    matrix = np.concatenate(parts) if parts else np.zeros((0, enc.DIM), dtype=np.float32)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp.npy")
        try:
            np.save(tmp, matrix, allow_pickle=False)
            os.replace(tmp, cached)
        finally:  # a full disk or a Ctrl-C mid-save: no partial copy left in the folder for good
            tmp.unlink(missing_ok=True)
    return matrix


def similarities_for(
    index_file: str | os.PathLike[str],
    prompts: Sequence[str],
    *,
    top: int | None = 20,
    want: Sequence[Sequence[str]] | None = None,
    encoder: enc.Encoder | None = None,
    cache_dir: Path | None = None,
    z: bool = False,
) -> list[dict[str, float]]:
    """For each prompt, card id -> cosine similarity: its `top` most similar cards (every card when None) and the
    ids in `want[i]`. The index's vectors are brought up to date first (encoded when missing)."""
    index_path = Path(index_file)
    encoder = encoder or enc.Encoder()
    vectors.refresh(index_path, encoder=encoder)
    vf = vectors.load(vectors.vectors_path(index_path))
    queries = prompt_vectors(prompts, encoder=encoder, cache_dir=cache_dir)
    return [similarities(vf, queries[i], top, want[i] if want else (), z) for i in range(len(prompts))]


def similarity_matrix(
    index_file: str | os.PathLike[str],
    prompts: Sequence[str],
    *,
    encoder: enc.Encoder | None = None,
    cache_dir: Path | None = None,
) -> tuple[list[str], npt.NDArray[np.float32]]:
    """The index's card ids and a prompts x cards matrix of cosine similarities (each card's best passage, as the
    hook gets them): for fitting and measuring over whole suites at once."""

    index_path = Path(index_file)
    encoder = encoder or enc.Encoder()
    vectors.refresh(index_path, encoder=encoder)
    vf = vectors.load(vectors.vectors_path(index_path))
    queries = prompt_vectors(prompts, encoder=encoder, cache_dir=cache_dir)
    out = vf.best_of_passages(queries @ vf.matrix.T)
    return list(vf.ids), out


def similarities_now(
    index_file: str | os.PathLike[str], prompt: str, *, top: int | None = None, z: bool = False
) -> dict[str, float] | None:
    """For cold commands (`cairn explain`, `cairn recall`): the prompt's similarities as the hook would get them,
    computed in this process (no warm encoder needed); None when the extra is not installed, the channel is off
    (`[recall] semantic = false`, `CAIRN_SEMANTIC=0`) or the index has no current vectors (never encodes cards)."""
    found = similarities_all_now(index_file, [prompt], top=top, z=z)
    return None if found is None else found[0]


def similarities_all_now(
    index_file: str | os.PathLike[str],
    prompts: Sequence[str],
    *,
    top: int | None = None,
    z: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, float]] | None:
    """`similarities_now` for many prompts (`cairn eval`'s cases), encoded in batches (`progress(done, prompts)`);
    None as it gives None. A side file that cannot be read or an encoder that cannot run raises (OSError,
    ValueError, `SemanticUnavailable`): the caller says so, where the hook serves by words alone."""
    from cairn.hot.index import IndexReader

    index_path = Path(index_file)
    if not enc.available() or not vectors.current(index_path):
        return None
    with IndexReader(index_path) as reader:
        if not vectors.enabled(reader.config):
            return None
    vf = vectors.load(vectors.vectors_path(index_path))
    queries = prompt_vectors(prompts, progress=progress)
    return [similarities(vf, queries[i], top, (), z) for i in range(len(prompts))]
