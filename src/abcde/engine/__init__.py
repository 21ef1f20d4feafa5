"""Engines: the only package that knows which backend runs the Ibis expressions."""

from abcde.engine.base import CSV_SUFFIXES, PARQUET_SUFFIXES, Engine, connect, resolve

__all__ = ["CSV_SUFFIXES", "PARQUET_SUFFIXES", "Engine", "connect", "resolve"]
