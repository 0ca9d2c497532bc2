"""Card blobs read into what the index stores, in worker processes when there are many.

Reading a card is parsing it, running the security rules on it and cutting its fields into tokens: about 1.5 ms a
card, most of it the security rules, all of it Python (one core). A full build of 10,000 cards is that work 10,000
times, so from `PARALLEL_FROM` cards, on a machine with more than one usable core, the cards go in chunks to a pool
of worker processes (`--jobs` on `cairn index` sets how many). Results come back in the order the cards were given:
the index is the same whatever the number of workers.

The workers are forked by a fork server where the platform has one (a fresh process that has imported this module
and nothing of the caller's: never a fork of a process whose threads may hold locks), else spawned. They get each
card's bytes and the security rules switched off, never a git handle or a setting of their own to read. When no
pool can be started (no working semaphores in a sandbox) or a worker dies, the cards left are read in this process.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from cairn.cards.card import CARDS_NOT_A_FOLDER, MAX_CARD_BYTES, Card, oversize_finding, parse_card
from cairn.finding import Finding
from cairn.gitrepo import SUBMODULE_MODE, SYMLINK_MODE, TreeEntry
from cairn.hot.tokens import tokenize
from cairn.hot.vault import CARDS_DIR
from cairn.index.store import CardTerms
from cairn.lint import security

if TYPE_CHECKING:  # multiprocessing's modules cost an update of one card 40 ms to import: only for a pool
    import multiprocessing.process
    from concurrent.futures import Future, ProcessPoolExecutor

PARALLEL_FROM = 1000  # cards: below it a pool's start (a fork server importing Cairn) costs more than it saves
MAX_JOBS = 8
_CHUNK = 200  # cards a task, at most: few enough round trips, small enough to keep every worker busy to the end

Read = tuple[CardTerms | None, list[Finding]]


def card_terms(card: Card, blob: str) -> CardTerms:
    """A parsed card turned into what the index stores: fields, record and tokens per field."""
    name_text = " ".join((card.name, *card.aliases))
    return CardTerms(
        id=card.id,
        path=card.path,
        blob=blob,
        name=card.name,
        summary=card.summary,
        status=card.status,
        expires_on=card.expires_on.isoformat() if card.expires_on else None,
        scope=tuple(s.lower() for s in card.scope),
        not_when=tuple(card.not_when),
        supersedes=tuple(card.supersedes),
        record=card.to_dict(),
        tokens=(tokenize(name_text), tokenize(card.summary), tokenize(card.body)),
    )


def needs_blob(entry: TreeEntry) -> bool:
    """Whether `read_entry` reads the entry's blob: a regular file not known to be over the card limit (every other
    entry is a finding without it)."""
    return entry.path != CARDS_DIR and entry.mode not in (SYMLINK_MODE, SUBMODULE_MODE) and entry.size <= MAX_CARD_BYTES


def read_entry(entry: TreeEntry, data: bytes | None, off: tuple[str, ...]) -> Read:
    """One tree entry read as a card (`data`: its blob's bytes, given when it `needs_blob`), or the findings that
    keep it out. `off`: the security rules switched off (`security.switched_off`)."""
    if entry.path == CARDS_DIR:
        return None, [Finding(entry.path, 0, "file-symlink", CARDS_NOT_A_FOLDER)]
    if entry.mode == SYMLINK_MODE:
        return None, [Finding(entry.path, 0, "file-symlink", "a card must be a regular file, not a symlink")]
    if entry.mode == SUBMODULE_MODE:
        return None, [Finding(entry.path, 0, "path-outside-cards", "a submodule cannot hold cards")]
    if entry.size > MAX_CARD_BYTES:  # never read a huge blob (its size is in the tree listing)
        return None, [oversize_finding(entry.path, entry.size)]
    if data is None:
        raise ValueError(f"{entry.path}: its blob's bytes were not read")
    card, findings = parse_card(entry.path, data)
    if card is None:
        return None, findings
    # Serving refuses what lint refuses: a card failing a security rule at this commit is not indexed.
    refused = security.refusals(entry.path, data, card, off=off)
    if refused:
        return None, refused
    return card_terms(card, entry.blob), findings


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def workers_for(total: int, jobs: int | None) -> int:
    """The worker processes to read `total` cards with: `jobs` when given (1: none), else the usable cores (at most
    `MAX_JOBS`) from `PARALLEL_FROM` cards; never more than there are cards."""
    if jobs is None:
        jobs = min(usable_cores(), MAX_JOBS) if total >= PARALLEL_FROM else 1
    return max(1, min(jobs, total))


def read_entries(
    items: Iterable[tuple[TreeEntry, bytes | None]],
    total: int,
    off: tuple[str, ...],
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Read]:
    """`read_entry` for each (entry, bytes) in order, in `workers_for(total, jobs)` processes (taken from `items`
    as they are needed, so the caller's reads keep pace); `progress(done, total)` as results come in."""
    workers = workers_for(total, jobs)
    chunks = _chunks(iter(items), max(1, min(_CHUNK, total // (workers * 4))))
    out: list[Read] = []

    def collect(results: list[Read]) -> None:
        out.extend(results)
        if progress:
            progress(len(out), total)

    if workers > 1:
        pool = _pool(workers)
        if pool is not None:
            with pool:
                left = _in_pool(pool, chunks, off, workers, collect)
            chunks = iter(left)  # what the pool could not read, if it broke
    for chunk in chunks:
        collect(read_chunk(chunk, off))
    return out


def read_chunk(chunk: Sequence[tuple[TreeEntry, bytes | None]], off: tuple[str, ...]) -> list[Read]:
    return [read_entry(entry, data, off) for entry, data in chunk]


Chunk = list[tuple[TreeEntry, bytes | None]]


def _chunks(items: Iterator[tuple[TreeEntry, bytes | None]], size: int) -> Iterator[Chunk]:
    chunk: Chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _in_pool(
    pool: ProcessPoolExecutor,
    chunks: Iterator[Chunk],
    off: tuple[str, ...],
    workers: int,
    collect: Callable[[list[Read]], None],
) -> list[Chunk]:
    """Chunks read in the pool, two a worker in flight, collected in order; the chunks not read when the pool
    broke (a worker killed), to be read in this process."""
    from concurrent.futures.process import BrokenProcessPool

    flight: deque[tuple[Future[list[Read]], Chunk]] = deque()
    unsent: list[Chunk] = []  # a chunk whose submission failed
    try:
        for chunk in chunks:
            unsent = [chunk]
            with _interrupts_held():  # a submission may start a worker (and the fork server)
                flight.append((pool.submit(read_chunk, chunk, off), chunk))
            unsent = []
            if len(flight) >= 2 * workers:
                collect(flight[0][0].result())
                flight.popleft()
        while flight:
            collect(flight[0][0].result())
            flight.popleft()
    except (BrokenProcessPool, OSError):  # a worker killed, or no process could be started
        return [chunk for _, chunk in flight] + unsent + list(chunks)
    except BaseException:  # Ctrl-C or a bug: do not wait for the chunks queued
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    return []


def _pool(workers: int) -> ProcessPoolExecutor | None:
    """A pool of `workers` processes, or None when this system cannot start one."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    try:
        with _interrupts_held():  # the pool's semaphores start multiprocessing's resource tracker
            if "forkserver" in multiprocessing.get_all_start_methods():
                server = multiprocessing.get_context("forkserver")
                server.set_forkserver_preload([__name__])
                return ProcessPoolExecutor(workers, mp_context=server, initializer=_start_worker)
            spawn = multiprocessing.get_context("spawn")
            return ProcessPoolExecutor(workers, mp_context=spawn, initializer=_start_worker)
    except (OSError, ImportError, NotImplementedError, ValueError):
        return None


# The signals that stop a command (`cli.main` turns SIGTERM and SIGHUP into an exception, as Ctrl-C is).
_STOPS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} if hasattr(signal, "SIGHUP") else {signal.SIGINT}


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Ctrl-C held back while this process starts others: they inherit the block, so the helpers multiprocessing
    starts (its fork server importing Cairn, its resource tracker) and the workers leave Ctrl-C (sent to the whole
    process group by a terminal) to this process, which gets it once they are started, stops the pool and says one
    line. Unblocked, each printed a traceback of the import it was in. SIGTERM and SIGHUP (sent to the group by
    `timeout`, a service manager, a closed terminal) likewise."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no process groups to signal either
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _start_worker() -> None:
    """A worker leaves Ctrl-C, SIGTERM and SIGHUP to the `cairn index` that started it (where no signal mask is
    inherited: a SIGTERM to the group killed the workers, and the `cairn index` stopping its pool waited for ever on
    a queue no worker read), and ends
    when that process ends: a `cairn index` killed outright (`kill -9`, the OOM killer) left its workers waiting for
    work for ever, and with them the fork server and the resource tracker, whose pipes they hold open."""
    import multiprocessing
    import threading

    for signum in _STOPS:
        signal.signal(signum, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_end_with, args=(parent,), daemon=True).start()


def _end_with(parent: multiprocessing.process.BaseProcess) -> None:
    parent.join()  # returns when the parent's end of the pipe closes: it exited or was killed
    os._exit(1)
