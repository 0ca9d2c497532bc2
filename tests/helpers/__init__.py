"""What the tests share, as an importable package (tests never import other tests): vaults and the installed
`cairn` (`vaults`), the in-process CLI (`cli`), agent payloads (`payloads`), hostile inputs (`hostile`), the lint
fixtures as data (`lintcases`), SSH commit signing (`signing`) and zsh and fish as a user runs them (`shells`).
Fixtures stay in conftest.py."""
