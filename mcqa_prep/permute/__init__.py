"""Option permutations: K option orders per question, each a complete row (docs/prepare.md, "Option
permutations").

    orders.py    which orders: rotation (CircularEval's cyclic shifts: every gold position once) or random,
                 seeded per question, anchored options in place (convert's phrase table of every language)
    block.py     the rendered prompt's option block: found exactly (or refused with the reason), rewritten
    variants.py  one row -> its variants (options, expected_answer, prompt; the link to their question)

`prepare --permute K` (prepare/permute.py) and `convert --permute K` write the variants; `passrates` measures
across them (passrates/consistency.py) and `curriculum --epochs N` says which one a trainer sees when.
"""
