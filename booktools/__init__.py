"""Helpers the chapters use to *show* things: source code, timings, pictures.

They are course tooling, not part of the engine: minijax never imports them.
"""

from booktools.source import show_source

__all__ = ["show_source"]
