"""Streaming row readers and atomic writers (JSONL, Parquet, directories, stdin)."""

from .readers import RowRecord, detect_split, expand_inputs, iter_rows
from .writers import AtomicFile, dumps_row

__all__ = ["RowRecord", "detect_split", "expand_inputs", "iter_rows", "AtomicFile", "dumps_row"]
