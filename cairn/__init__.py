"""Cairn: experience cards in a git vault, recalled into coding agents' prompts only when they fit."""

__version__ = "0.1.0"
