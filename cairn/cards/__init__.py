"""Cards: the card contract parsed from bytes, and writing, importing, listing and sanitizing cards."""
