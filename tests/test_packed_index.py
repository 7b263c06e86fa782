"""PackedIndex (the duplicate index's storage) answers exactly as a dict would, across spills into numpy
columns, for keys over the whole 64-bit range and values over 128 bits."""

from __future__ import annotations

import random

import pytest

from mcqa_prep.validate import packed
from mcqa_prep.validate.packed import PackedIndex


@pytest.mark.parametrize("seed", range(12))
def test_packed_index_answers_as_a_dict(monkeypatch, seed):
    monkeypatch.setattr(packed, "SPILL", 7)  # spill often: most keys end up in the columns
    rng = random.Random(seed)
    edge = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]
    ref: dict[int, int] = {}
    idx = PackedIndex()
    for _ in range(300):
        if rng.random() < 0.4 and ref:
            batch = rng.sample(list(ref), min(len(ref), rng.randint(1, 5)))
            batch += [rng.getrandbits(64) for _ in range(rng.randint(0, 3))]
            assert idx.isdisjoint(batch) == all(k not in ref for k in batch)
            idx.prefetch(batch if rng.random() < 0.5 else None)
            for k in batch:
                assert idx.get(k) == ref.get(k)
            continue
        fresh = [k for k in {rng.choice(edge) if rng.random() < 0.1 else rng.getrandbits(64)} if k not in ref]
        for k in fresh:
            v = rng.getrandbits(rng.choice([8, 63, 64, 127, 128]))
            ref[k] = v
            if rng.random() < 0.5:
                idx[k] = v
            else:
                idx.update([(k, v)])
    idx.prefetch(None)
    assert len(idx) == len(ref) and dict(idx.items()) == ref
    assert len(idx.keys) > 0  # the columns were used
    assert all(idx.get(k) == v for k, v in ref.items())
