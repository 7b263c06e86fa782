"""The package version (one home: pyproject.toml states the same; a test keeps them equal)."""

__version__ = "0.1.0"
