"""Progress lines for a stderr that is not a terminal: the rule, with a fake clock."""

from __future__ import annotations

from engram.cli.progress import ProgressLines, printable


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_first_update_at_once_then_one_line_per_interval_then_the_total() -> None:
    clock, lines = Clock(), []
    progress = ProgressLines("indexing code", lines.append, interval=5.0, clock=clock)
    progress(0, 120, "src/a.py")
    for done in range(1, 120):
        clock.now += 0.25  # 30 s of work
        progress(done, 120, f"src/f{done}.py")
    progress.finish()
    assert lines[0] == "engram: indexing code: 0/120 (0%) src/a.py [0.0s]\n"
    assert len(lines) == 1 + 5 + 1  # the first, one per 5 s, the last
    assert lines[1] == "engram: indexing code: 20/120 (16%) src/f20.py [5.0s]\n"
    assert lines[-1] == "engram: indexing code: done, 120 in 29.8s\n"
    assert all(line.count("\n") == 1 and line.endswith("\n") for line in lines)


def test_unknown_total_and_nothing_reported() -> None:
    clock, lines = Clock(), []
    silent = ProgressLines("mining git history", lines.append, clock=clock)
    silent.finish()
    assert lines == []  # a step that reported nothing prints nothing
    progress = ProgressLines("mining git history", lines.append, clock=clock)
    progress(12, None)
    clock.now += 65
    progress.finish()
    assert lines == [
        "engram: mining git history: 12 [0.0s]\n",
        "engram: mining git history: done, 12 in 1m05s\n",
    ]


def test_file_names_never_carry_control_characters() -> None:
    lines: list[str] = []
    progress = ProgressLines("indexing\x1b[2J code", lines.append, clock=Clock())
    progress(1, 2, "evil\x1b[31m\rname\n.py\u202e")
    assert lines == ["engram: indexing?[2J code: 1/2 (50%) evil?[31m?name?.py? [0.0s]\n"]
    long = printable("d/" * 200 + "end.py")
    assert len(long) == 100 and long.endswith("end.py") and "…" in long
