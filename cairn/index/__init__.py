"""The index: built from a commit's tree into a rebuildable cache, with provenance, expiry and its audit."""
