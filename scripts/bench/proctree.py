#!/usr/bin/env python3
"""Peak RSS of a whole process tree, sampled, and a child run measured by it.

``getrusage(RUSAGE_CHILDREN).ru_maxrss`` is the peak of the *largest single* descendant,
not of the tree: once ``engram index`` parses in worker processes (docs/codegraph.md, "A
cold index on several cores") the memory the index holds is the main process's plus every
worker's, and a peak read from one process would flatter it. The benches therefore also
sample the tree: every ``interval`` seconds (0.5 by default; a sample costs ~1 ms of CPU)
the RSS (``VmRSS``) of the root and of every process whose parent chain leads to it,
summed; the largest sum is the tree's peak. Two
errors, opposite ways: a sample can miss a spike shorter than the interval, and ``VmRSS``
counts pages shared between processes (the interpreter, the grammars' libraries) once in
each, so the sum over several interpreters is above what they hold together. It is
reported beside the single-process peak (which is exact).

Linux only (``/proc``); elsewhere the sampler reports ``None``.

As a script it is the wrapper ``scale.py`` runs its measured children under (so that
``RUSAGE_CHILDREN`` holds that child alone):
``proctree.py run -- CMD ARGS...`` prints the child's stdout, then one JSON line
``{"code", "seconds", "cpu_seconds", "peak_rss_mb", "tree_peak_rss_mb",
"tree_peak_anon_mb", "tree_at_peak"}`` (the last: each process at the sampled peak).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

_FIELD = re.compile(rb"^(Name|VmRSS|RssAnon|RssFile|RssShmem):\s+(\S+)", re.MULTILINE)


class ProcessMemory(NamedTuple):
    """One process's memory now, in kB: ``rss`` (``VmRSS``) is ``anon`` (its heap and
    stacks: what it allocated) plus ``file`` (mapped files: libraries, a ``git`` pack) plus
    shared memory; only ``anon`` is never counted twice across processes (a vforked child
    that has not exec'd yet reads its parent's, though)."""

    pid: int
    name: str
    rss: int
    anon: int
    file: int


def _children_map() -> dict[int, list[int]]:
    """Parent pid → child pids, read from ``/proc/*/stat``."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_bytes()
        except OSError:
            continue
        # the command name is in parentheses and may hold spaces: fields follow the last ')'
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def tree_memory(root: int) -> list[ProcessMemory] | None:
    """The memory of ``root`` and of each of its descendants now (``None``: no /proc)."""
    if not os.path.isdir("/proc"):
        return None
    children = _children_map()
    found: list[ProcessMemory] = []
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            status = Path(f"/proc/{pid}/status").read_bytes()
        except OSError:
            status = b""
        fields = {k.decode(): v.decode(errors="replace") for k, v in _FIELD.findall(status)}
        if "VmRSS" in fields:  # a zombie has none
            found.append(
                ProcessMemory(
                    pid,
                    fields.get("Name", "?"),
                    int(fields["VmRSS"]),
                    int(fields.get("RssAnon", 0)),
                    int(fields.get("RssFile", 0)),
                )
            )
        todo.extend(children.get(pid, ()))
    return found


def tree_rss_kb(root: int) -> int | None:
    """Summed ``VmRSS`` of ``root`` and its descendants now, in kB (``None``: no /proc)."""
    found = tree_memory(root)
    return None if found is None else sum(m.rss for m in found)


class TreeRssSampler:
    """Sample a process tree's summed RSS in a thread until stopped; ``peak_mb`` after."""

    def __init__(self, root: int, interval: float = 0.5) -> None:
        self.root = root
        self.interval = interval
        self.peak_kb: int | None = None
        #: the largest summed anonymous memory (``RssAnon``) seen, in kB
        self.peak_anon_kb: int | None = None
        #: each process at the sample with the largest summed ``VmRSS``
        self.at_peak: list[ProcessMemory] = []
        #: the sampler's own CPU seconds (~1 ms a sample): a bench that samples its own
        #: process subtracts them from what it measures
        self.cpu_seconds = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-rss", daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                found = tree_memory(self.root)
                if found is None:
                    return
                rss, anon = sum(m.rss for m in found), sum(m.anon for m in found)
                if rss > (self.peak_kb or 0):
                    self.peak_kb, self.at_peak = rss, found
                self.peak_anon_kb = max(self.peak_anon_kb or 0, anon)
                self._stop.wait(self.interval)
        finally:
            self.cpu_seconds = time.thread_time()

    def __enter__(self) -> TreeRssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float | None:
        return None if self.peak_kb is None else round(self.peak_kb / 1024, 1)

    @property
    def peak_anon_mb(self) -> float | None:
        return None if self.peak_anon_kb is None else round(self.peak_anon_kb / 1024, 1)

    def peak_detail(self) -> list[dict[str, object]]:
        """Each process at the ``VmRSS`` peak, largest first, in MB: which one holds what."""
        return [
            {"name": m.name, "rss_mb": round(m.rss / 1024, 1), "anon_mb": round(m.anon / 1024, 1),
             "file_mb": round(m.file / 1024, 1)}
            for m in sorted(self.at_peak, key=lambda m: -m.rss)
        ]  # fmt: skip


def run(args: list[str]) -> dict[str, object]:
    """Run ``args`` as this process's only child; its time, CPU (with its own finished
    children) and peak RSS, single-process and whole-tree."""
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with TreeRssSampler(proc.pid) as sampler:
        out, err = proc.communicate()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    sys.stderr.write(err[-1500:])
    print(out.strip())
    return {
        "code": proc.returncode,
        "seconds": round(time.perf_counter() - started, 2),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "tree_peak_rss_mb": sampler.peak_mb,
        "tree_peak_anon_mb": sampler.peak_anon_mb,
        "tree_at_peak": sampler.peak_detail(),
    }


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "run" or argv[1] != "--":
        sys.stderr.write("usage: proctree.py run -- CMD [ARGS...]\n")
        return 2
    print(json.dumps(run(argv[2:])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
