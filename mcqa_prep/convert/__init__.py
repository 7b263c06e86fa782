"""`convert`: other multiple-choice datasets (GPQA, MMLU, ARC, ... or any column map) into validated NeMo Gym
`mcqa` rows, with templates and balanced option shuffling. Design: docs/design/convert.md."""

from .core import ConvertError, ConvertReport, convert, default_rejects
from .presets import PRESETS, Preset, detect
from .shapes import REJECT_REASONS, ColumnMap
from .templates import BUILTIN as BUILTIN_TEMPLATES

__all__ = [
    "BUILTIN_TEMPLATES",
    "ColumnMap",
    "ConvertError",
    "ConvertReport",
    "PRESETS",
    "Preset",
    "REJECT_REASONS",
    "convert",
    "default_rejects",
    "detect",
]
