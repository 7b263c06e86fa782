"""Difficulty under a contract: per-question pass rates measured from rollouts, their table, and the
filters `prepare` applies with them.

    measure.py     `passrates`: rollouts -> pass counts per (question, model), under one contract (gather():
                   rollouts read under one contract, shared with `audit`'s wrong-key analysis)
    cells.py       one contract's rollouts per (question, model), answers tracked, under a no_answer rule
    table.py       the pass-rate table format: write, read with every check, find a row's evidence
    difficulty.py  `prepare`'s pass-rate filters and reward_profiles stamping

What a single rollout is evidence about (question key, model, pass) is `mcqa_prep.evidence`, shared with
`summarize` and `report`. Design: docs/design/passrates.md.
"""
