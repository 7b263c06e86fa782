"""Final-answer selection (grading.md, "Final-answer selection"). Owned by the selection work."""

SELECTOR_VERSION = "1.0.0"
