"""bench/sched_profile.py's reading of ``perf sched timehist`` and ``py-spy dump`` output
(the recording itself needs perf and the right to trace: run by hand, bench/RESULTS.md)."""

from __future__ import annotations

import sys

import pytest

from tests.support import REPO

sys.path.insert(0, str(REPO / "bench"))
import sched_profile

TIMEHIST = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
   33661.372771 [0000]  python[21852]                       0.000      0.000      0.176
   33661.372947 [0000]  python[21920/21852]                 0.000      0.035      0.024
   33661.373209 [0000]  python[21852]                       0.176      0.000      0.262
   33661.373222 [0001]  python[21920/21852]                 0.262      3.973      0.013
"""

DUMP = """\
Process 21852: /usr/bin/python -m bench._stalechild
Python v3.11.7 (/usr/bin/python3.11)

Thread 21852 (active+gil): "MainThread"
    reader (_stalechild.py:72)
Thread 21920 (idle): "aioinformer-pipeline-7f6b95cd0550"
    EpollSelector.select (selectors.py:468)
"""


def test_each_switch_in_is_read_per_thread() -> None:
    threads = sched_profile.parse_timehist(TIMEHIST)
    assert threads[21852] == {
        "off_cpu": [0.0, 0.176], "sched_delay": [0.0, 0.0], "run": [0.176, 0.262]
    }  # fmt: skip
    assert threads[21920]["sched_delay"] == [0.035, 3.973]
    pipeline = sched_profile.summary(threads[21920])
    assert pipeline["switches"] == 2 and pipeline["sched_delay_max_ms"] == 3.973
    assert pipeline["run_total_ms"] == pytest.approx(0.037, abs=0.05)


def test_threads_are_named_from_py_spy() -> None:
    assert sched_profile.thread_names(DUMP) == {
        21852: "MainThread",
        21920: "aioinformer-pipeline-7f6b95cd0550",
    }
