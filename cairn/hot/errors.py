"""Cairn's exceptions: one root, translated into `Error: ...` and exit 1 once, at the CLI edge."""


class CairnError(Exception):
    """A user-facing failure: the message says what is wrong and what to do."""


class VaultNotFound(CairnError):
    pass


class VaultLeftOut(VaultNotFound):
    """A vault whose folder, or its cards/, git leaves out of the work tree (a sparse checkout, a submodule not
    checked out), or whose cards/ is missing beside its `cairn.toml` (named in another case: `CardsMisnamed`): it is
    there, but no command can find its cards until it is checked out (or renamed, or made)."""


class CardsMisnamed(VaultLeftOut):
    """A vault whose cards/ is named in another case (`Cards/`): unlike a sparse checkout's, which a commit may
    leave out on purpose, its cards are never served, so the pre-commit hooks refuse it too."""


class NotAGitRepository(CairnError):
    pass


class GitNotFound(CairnError):
    """No `git` on PATH: Cairn reads every vault through git."""


class UnsupportedRepository(NotAGitRepository):
    """A git repository Cairn cannot read (objects named by SHA-256)."""


class RepositoryNotOwned(NotAGitRepository):
    """A git repository another user owns, which git refuses until this user trusts it (`safe.directory`)."""


class CardNotFound(CairnError):
    pass


class CardExists(CairnError):
    pass


class InvalidCard(CairnError):
    pass


class InvalidConfig(CairnError):
    pass


class StoredConfigInvalid(InvalidConfig):
    """Settings stored in an index that Cairn would not accept: `why` says which."""

    def __init__(self, why: str) -> None:
        super().__init__(f"the settings stored in the index: {why}; run `cairn index --rebuild`")
        self.why = why


class ConfigError(InvalidConfig):
    """The user configuration (`cairn/hot/userconfig.py`) is malformed: the message names the file and the fix."""


class InvalidId(CairnError):
    pass


class IndexMissing(CairnError):
    pass


class IndexCorrupt(CairnError):
    pass


class IndexStale(CairnError):
    """The index is of a commit the served ref no longer holds (a rewritten branch): agents get nothing from it."""


class InvalidCases(CairnError):
    pass


class RefusedWrite(CairnError):
    pass
