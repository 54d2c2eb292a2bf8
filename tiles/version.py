"""The tiles version: part of every disk-cache key and of conformance reports."""

__version__ = "0.1.0"
