"""`mcqa-prep curriculum`: a sampling schedule over training steps from pass-rate tables and dataset rows.

    schedule.py  the schedule as pure functions: step ranges, weights per (domain, bucket), row weights, the
                 rows in schedule order
    run.py       the workflow: read the table(s) and rows, place every row, write the outputs atomically

Design and how trainers read it (NeMo RL, open-instruct): docs/design/curriculum.md.
"""

from .run import CurriculumRequest, curriculum
from .schedule import KINDS, ScheduleSpec

__all__ = ["KINDS", "CurriculumRequest", "ScheduleSpec", "curriculum"]
