"""mcqa-prep: pull, validate, prepare and rescore MCQA data for RL post-training."""

from ._version import __version__

__all__ = ["__version__", "load_prepared"]


def __getattr__(name):  # lazy: `import mcqa_prep.grader` must not pull in datasets
    if name == "load_prepared":
        from .prepared.load import load_prepared

        return load_prepared
    raise AttributeError(name)
