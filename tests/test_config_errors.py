"""A committed cairn.toml Cairn cannot read: what `cairn lint`, `cairn index` and the served index say and do."""

from __future__ import annotations

from helpers.vaults import VaultRepo

BAD_TOML = '# team settings\n[recall]\nk1 = 1.2\n\n[lint]\nmax_age_days = "a year"\n'


def _bad_vault(repo: VaultRepo) -> str:
    repo.write("docker/layers", "Order docker layers by change rate", "Copy the lockfile before the sources.")
    repo.write_raw("cairn.toml", BAD_TOML)
    return repo.commit("A bad setting")


def test_lint_points_at_the_line_of_the_mistake(vault_repo: VaultRepo) -> None:
    _bad_vault(vault_repo)
    done = vault_repo.cairn("lint")
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == (
        "cairn.toml:6: config-invalid [lint] max_age_days must be a whole number; the defaults were used"
    )
