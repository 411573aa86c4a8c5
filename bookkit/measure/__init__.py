"""Measurements that are not tests: timings (``bench``, ``bench_rope``), numbers on
other CPUs (``portability``), do the tests catch bugs (``mutate``), reading times
(``prose_stats``)."""
