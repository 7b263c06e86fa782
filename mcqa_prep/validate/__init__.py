"""Row validation: every defect of every row, with its address, a stable rule name and a fix.

A package of rules (see registry.py): each rule is a function registered with its name, severity,
description and fix; docs/design/validate.md's rule table is generated from the registry.

    registry.py      the registry: Rule, RULES, @rule, paths, the docs table
    facts.py         per-row facts and the guard bits that let the row checker skip rules that cannot fire
    schema_rules.py  files, rows as documents, NaN/Infinity, mcqa-row.v1 (jsonschema-rs guard, jsonschema)
    row_rules.py     prompt, options, gold, grading mode
    regex_rules.py   custom output_regex: compile, groups, time bound, controls (cached per pattern)
    controls.py      positive / negative controls and time bound of one pattern
    regex_audit.py   the adversarial audit of an output_regex (probes from its own structure), and fixes
                     (the regex audit of one row's pattern: not the `audit` command, mcqa_prep/audit/)
    answer_format.py a prompt's answer-format examples and its unrendered template markers
    regex_audit_rules.py  rules from the regex audit and from the prompt's own answer format (per template)
    synth.py         compliant answers synthesised from a pattern's parse tree
    crossrow.py      duplicates, gold histogram, position bias (state fed in input order)
    row_checker.py   RowChecker: a row -> its row findings and the small keys the cross-row rules need
    row_validator.py RowValidator: check() row by row, then the cross-row rules, finish(), summary()
    run.py           the `validate` command's run: validate_paths over files, directories, stdin, pulls

`RowValidator.check(rec)` is what `prepare` calls row by row; `validate_paths` is the `validate` command.
"""

from __future__ import annotations

# isort: off
# the rule modules register their rules on import, in this order: the docs' and each row's finding order
from . import schema_rules, row_rules, regex_rules, regex_audit_rules, crossrow  # noqa: F401

# isort: on
from .facts import normalize_texts
from .registry import ERROR, RULES, WARNING, Rule, rules_markdown
from .row_validator import RowValidator
from .run import REPORT_VERSION, ValidateReport, validate_paths

__all__ = [
    "ERROR",
    "REPORT_VERSION",
    "RULES",
    "WARNING",
    "Rule",
    "RowValidator",
    "ValidateReport",
    "normalize_texts",
    "rules_markdown",
    "validate_paths",
]
