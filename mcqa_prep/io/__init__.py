"""Streaming row readers, the split rule, atomic writers and the file hasher."""

from .paths import DATA_SUFFIXES, expand_inputs, split_of
from .readers import iter_file, iter_rows
from .writers import AtomicFile, dumps_row

__all__ = ["DATA_SUFFIXES", "expand_inputs", "split_of", "iter_file", "iter_rows", "AtomicFile", "dumps_row"]
