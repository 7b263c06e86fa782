"""The split of a data file is the `datasets` library's own answer (io.paths.split_of), on the tricky paths
of data/golden/split_paths.jsonl: each is asked of the installed library, as a directory holding only that
file, and of our rule. The same list feeds every command in test_input_agreement.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcqa_prep.io.paths import IGNORED_NAMES, SEPARATORS, SPLIT_KEYWORDS, ignored, split_of

REPO = Path(__file__).resolve().parent.parent
CASES = [json.loads(line) for line in (REPO / "data" / "golden" / "split_paths.jsonl").open()]
ORDER = ["train", "validation", "test"]


def datasets_split(root: Path, rel: str) -> str | None:
    """The split the `datasets` library puts `rel` in, with `rel` the only file under `root` (the first of
    train, validation, test when it lists the file in several); None when the file is not data to it."""
    from datasets.data_files import DataFilesDict, EmptyDatasetError, get_data_patterns

    f = root / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text('{"a": 1}\n')
    try:
        patterns = get_data_patterns(str(root))
    except EmptyDatasetError:
        return None
    files = DataFilesDict.from_patterns(patterns, base_path=str(root))
    splits = [
        str(s) for s, found in files.items() if any(Path(str(u)).resolve() == f.resolve() for u in found)
    ]
    if not splits:
        return None
    return min(splits, key=lambda s: ORDER.index(s) if s in ORDER else len(ORDER))


@pytest.mark.parametrize("case", CASES, ids=[c["path"] for c in CASES])
def test_the_split_is_the_datasets_librarys(case, tmp_path):
    assert datasets_split(tmp_path, case["path"]) == case["split"]
    if case["split"] is None:
        assert ignored(case["path"])
    else:
        assert not ignored(case["path"])
        assert split_of(case["path"]) == case["split"]


def test_keywords_separators_and_ignored_names_are_the_librarys():
    from datasets import data_files

    assert {str(k): v for k, v in data_files.SPLIT_KEYWORDS.items()} == {
        k: list(v) for k, v in SPLIT_KEYWORDS
    }
    assert data_files.NON_WORDS_CHARS == SEPARATORS
    assert set(data_files.FILES_TO_IGNORE) == IGNORED_NAMES
    assert data_files.SPLIT_PATTERN_SHARDED.startswith("data/{split}-[0-9][0-9][0-9][0-9][0-9]-of-")


def test_a_file_given_by_itself_is_read_by_its_name(tmp_path):
    """The directories above an argument say nothing: `test_run/train.jsonl` given as a file is train."""
    from mcqa_prep.io.paths import expand_inputs

    f = tmp_path / "test_run" / "dev.jsonl"
    f.parent.mkdir()
    f.write_text("{}\n")
    assert [(x.name, x.split) for x in expand_inputs([f])] == [("dev.jsonl", "validation")]
    assert [(x.name, x.split) for x in expand_inputs([f.parent])] == [("dev.jsonl", "validation")]
