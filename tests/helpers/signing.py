"""SSH-signed commits in a test vault, verified against an allowed-signers file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.vaults import ANN, VaultRepo


def ssh_signing(vault_repo: VaultRepo, tmp_path: Path) -> None:
    """Configure the vault to sign with a fresh ed25519 key whose public half Ann's allowed-signers entry holds;
    skips the test where ssh-keygen is missing."""
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed; cannot make a signed commit")
    key = tmp_path / "signing-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ann", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"{ANN[1]} {key.with_suffix('.pub').read_text().strip()}\n")
    vault_repo.git("config", "gpg.format", "ssh")
    vault_repo.git("config", "user.signingkey", str(key))
    vault_repo.git("config", "gpg.ssh.allowedSignersFile", str(allowed))


def signed_commit(vault_repo: VaultRepo, message: str) -> str:
    """Commit everything, signed; returns the commit."""
    vault_repo.git("add", "-A")
    vault_repo.git("commit", "-q", "--no-verify", "-S", "-m", message)
    return vault_repo.git("rev-parse", "HEAD")
