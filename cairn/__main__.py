"""`python -m cairn` runs the command line."""

from cairn.entry import main

main()
