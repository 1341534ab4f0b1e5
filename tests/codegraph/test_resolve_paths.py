"""The import resolver's path helpers give exactly ``posixpath``'s answers (they skip its
Python only where it cannot change one), and a crate root found once per folder is each
file's own crate's."""

from __future__ import annotations

import itertools
import posixpath

from engram.codegraph.extract import ImportRef
from engram.codegraph.resolve import ImportResolver, _dirname, _join

_PARTS = ["", ".", "..", "/", "//", "a", "a/", "/a", "a//b", "./a", "../a", "a/.", "a/..",
          ".b", "a/.b", "a/b/../c", "///x", "x/", "b.rs", "..c", "a/./b"]  # fmt: skip


def _reference_join(*parts: str) -> str:
    kept = [p for p in parts if p]
    if not kept:
        return ""
    joined = posixpath.normpath(posixpath.join(*kept))
    return "" if joined == "." else joined


def test_join_and_dirname_are_posixpaths() -> None:
    for size in (1, 2, 3):
        for parts in itertools.product(_PARTS, repeat=size):
            assert _join(*parts) == _reference_join(*parts), parts
    for path in [*_PARTS, *("/".join(p) for p in itertools.product(_PARTS, repeat=2))]:
        assert _dirname(path) == posixpath.dirname(path), path


def test_crate_roots_found_once_per_folder_are_each_files_own() -> None:
    files = [
        "app/src/main.rs",
        "app/src/util.rs",
        "app/src/net/mod.rs",
        "app/src/net/tcp.rs",
        "app/src/net/udp.rs",
        "app/vendored/lib/src/lib.rs",
        "app/vendored/lib/src/net/mod.rs",
        "app/vendored/lib/src/net/tcp.rs",
        "app/vendored/lib/src/util.rs",
        "loose/a.rs",
        "loose/b.rs",
    ]
    resolver = ImportResolver(files)
    util = ImportRef("crate", ["util"], False, 1)
    for _ in range(2):  # answered again from the folder's memo
        assert resolver.resolve("rust", "app/src/net/tcp.rs", util) == ["app/src/util.rs"]
        assert resolver.resolve("rust", "app/src/net/udp.rs", util) == ["app/src/util.rs"]
        assert resolver.resolve("rust", "app/vendored/lib/src/net/tcp.rs", util) == [
            "app/vendored/lib/src/util.rs"
        ]
        # no crate root above: the file's own folder is the root
        assert resolver.resolve("rust", "loose/a.rs", ImportRef("crate", ["b"], False, 1)) == [
            "loose/b.rs"
        ]
        resolver._memo.clear()
    assert resolver._rust_roots == {
        "app/src/net": "app/src",
        "app/vendored/lib/src/net": "app/vendored/lib/src",
        "loose": "loose",
    }
