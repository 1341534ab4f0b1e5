"""Chunking and hybrid code search (with a deterministic stand-in embedder)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import pytest

from engram.codegraph import CodeSearch, chunk_file
from engram.codegraph.graph import Symbol
from engram.codegraph.search import fuse_scores, is_identifier_query, tokenize


class HashingEmbedder:
    """Bag of hashed code-aware tokens: similar wording gives similar vectors, deterministically."""

    model_id = "test-hashing-64"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                out[row, int(hashlib.md5(token.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-9)


def test_tokenize_splits_identifiers_and_stems() -> None:
    tokens = tokenize("def readConfigFile(path_name): parsing files")
    assert {"readconfigfile", "read", "config", "file", "path", "name", "pars"} <= set(tokens)
    assert "the" not in tokenize("the file")
    assert is_identifier_query("readConfigFile") and is_identifier_query("load_config")
    assert not is_identifier_query("how to read a config file")


def test_chunks_follow_definitions_and_window_the_rest() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(200))
    text = (
        "import os\nimport sys\nimport re\n\n"
        "def small():\n    return 1\n\n"
        "class Big:\n    '''doc'''\n"
        + "\n".join(f"    def m{i}(self):\n        return {i}\n" for i in range(70))
        + f"\ndef long():\n{body}\n"
    )
    lines = text.splitlines()
    big_end = next(i for i, line in enumerate(lines, 1) if line.startswith("def long"))
    symbols = [
        Symbol("small", "function", "small", "m.py", 5, 6),
        Symbol("Big", "class", "Big", "m.py", 8, big_end - 2),
        *[
            Symbol(f"m{i}", "method", f"Big.m{i}", "m.py", 10 + 3 * i, 11 + 3 * i)
            for i in range(70)
        ],
        Symbol("long", "function", "long", "m.py", big_end, len(lines)),
    ]
    chunks = chunk_file("m.py", text, symbols, "python")
    kinds = [(c.kind, c.name) for c in chunks]
    assert ("module", None) in kinds  # the three imports
    assert ("function", "small") in kinds
    assert ("class", "Big") in kinds and ("method", "Big.m3") in kinds
    long_chunks = [c for c in chunks if c.name == "long"]
    assert len(long_chunks) == 2 and long_chunks[0].end_line >= long_chunks[1].start_line
    small = next(c for c in chunks if c.name == "small")
    assert small.content == "def small():\n    return 1"
    assert small.context_prefix() == "File: m.py | function: small (small) | Lines: 5-6"
    assert small.embedding_text().startswith("File: m.py")


def test_text_files_are_windowed_with_headings() -> None:
    text = "# Title\n\n" + "\n".join(f"line {i}" for i in range(100)) + "\n## Second\nmore\n"
    chunks = chunk_file("docs/a.md", text)
    assert chunks[0].kind == "text" and chunks[0].name == "Title"
    assert chunks[-1].end_line == len(text.splitlines())
    assert len(chunks) >= 3


def test_a_text_windows_heading_is_looked_for_only_in_lines_with_a_hash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The heading regex ran on every line of every window of a text file (most of them
    prose with no heading: ~6 % of a cold index's chunk cutting, docs/codegraph.md "A sixth
    look"); a line without ``#`` cannot be one, and the names stay those of the regex."""
    from engram.codegraph import chunking

    matched: list[str] = []
    heading = chunking._HEADING_RE

    class Counting:
        def match(self, line: str) -> re.Match[str] | None:
            matched.append(line)
            return heading.match(line)

    monkeypatch.setattr(chunking, "_HEADING_RE", Counting())
    prose = [f"line {i} of prose, no heading" for i in range(150)]
    text = "\n".join([*prose[:60], "  ## Setup ##", *prose[60:], "#not a heading", "end"])
    chunks = chunk_file("docs/a.md", text)
    assert [c.name for c in chunks] == [None, "Setup", None, None, None]
    assert set(matched) == {"  ## Setup ##", "#not a heading"}


def test_fusion_beats_a_single_wrong_retriever() -> None:
    keyword = np.array([5.0, 0.0, 0.1, 0.0], dtype=np.float32)
    dense = np.array([0.6, 0.1, 0.5, 0.0], dtype=np.float32)
    fused = fuse_scores(keyword, dense, 0.7, 4)
    assert int(np.argmax(fused)) == 0


def test_code_search_end_to_end_and_incremental(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(
        {
            "src/config.py": (
                "def readConfigFile(path):\n    '''Load settings from a TOML file.'''\n"
                "    return open(path).read()\n"
            ),
            "src/net.py": "def open_socket(host, port):\n    '''Connect over TCP.'''\n    pass\n",
            "docs/guide.md": "# Networking\n\nSockets are opened with open_socket.\n",
        }
    )
    embedder = HashingEmbedder()
    search = CodeSearch(graph.workspace, graph, embedder)
    report = search.index_chunks()
    assert report.files_chunked == 3 and report.embedded == report.chunks
    hits = search.search("read config file", k=3)
    assert hits[0].file == "src/config.py" and hits[0].name == "readConfigFile"
    assert (
        hits[0].start_line == 1
        and hits[0].end_line == 3
        and "def readConfigFile" in hits[0].snippet
    )
    assert search.search("tcp socket", k=1, mode="bm25")[0].file == "src/net.py"
    assert search.search("open_socket", k=1, mode="dense")[0].file in (
        "src/net.py",
        "docs/guide.md",
    )
    # nothing changed: nothing re-embedded
    calls = embedder.calls
    assert search.index_chunks().files_chunked == 0 and embedder.calls == calls
    # an edit re-chunks one file only
    (graph.workspace.root / "src/net.py").write_text("def close_socket(sock):\n    pass\n")
    graph.reindex_file("src/net.py")
    again = search.index_chunks()
    assert again.files_chunked == 1
    assert search.search("close socket", k=1)[0].name == "close_socket"
    # a removed file leaves the index
    (graph.workspace.root / "docs/guide.md").unlink()
    graph.index()
    assert search.index_chunks().files_removed == 1
    assert all(h.file != "docs/guide.md" for h in search.search("networking sockets", k=5))
    search.close()


def test_search_without_embedder_is_keyword_only(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph({"a.py": "def parse_header(line):\n    return line\n"})
    search = CodeSearch(graph.workspace, graph, None)
    search.index_chunks()
    assert search.search("parse header")[0].name == "parse_header"
    assert search.search("parse header", mode="dense") == []
    assert search.search("   ") == []
    # keyword-only, a query no chunk matches is no hit at all (it listed every chunk at
    # score 0.000, hybrid being the default mode)
    assert search.search("levenshtein distance") == []
    assert all(hit.score > 0 for hit in search.search("parse header", k=50))
    search.close()


def test_chunks_live_in_lancedb_and_unchanged_chunks_are_not_re_embedded(make_graph) -> None:  # type: ignore[no-untyped-def]
    source = (
        "def load_settings(path):\n    return toml.load(path)\n\n\n"
        "def save_settings(path, data):\n    return toml.dump(data, path)\n"
    )
    graph = make_graph({"cfg.py": source})
    engram_dir = graph.workspace.ensure_engram_dir()
    legacy = engram_dir / "code_chunks.sqlite"
    legacy.write_bytes(b"an index from an older Engram")
    embedder = HashingEmbedder()
    search = CodeSearch(graph.workspace, graph, embedder)
    first = search.index_chunks()
    assert first.embedded == first.chunks == 2
    assert not legacy.exists() and (engram_dir / "chunks.lance").is_dir()

    from engram.store import ChunkStore

    store = ChunkStore(graph.workspace, read_only=True)
    assert [c.name for c in store.chunks_for_file("cfg.py")] == ["load_settings", "save_settings"]

    # same line count, only the second function's body changes: one chunk embedded again
    (graph.workspace.root / "cfg.py").write_text(source.replace("toml.dump", "json.dump"))
    graph.reindex_file("cfg.py")
    again = search.index_chunks(files=["cfg.py"])
    assert again.files_chunked == 1 and again.chunks == 2 and again.embedded == 1
    assert search.search("json dump settings", k=1)[0].name == "save_settings"
    assert [c.name for c in store.chunks_for_file("cfg.py")] == ["load_settings", "save_settings"]
    search.close()


def test_another_process_re_index_is_picked_up(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph({"a.py": "def parse_header(line):\n    return line\n"})
    writer = CodeSearch(graph.workspace, graph, None)
    writer.index_chunks()
    reader = CodeSearch(graph.workspace, graph, None)
    assert reader.search("parse header", k=1)[0].name == "parse_header"
    (graph.workspace.root / "b.py").write_text("def render_footer(page):\n    return page\n")
    graph.index()
    assert writer.index_chunks().files_chunked == 1
    assert reader.search("render footer", k=1)[0].name == "render_footer"
    writer.close()
    reader.close()


def test_importing_codegraph_does_not_load_lancedb() -> None:
    import subprocess
    import sys

    probe = "import sys, engram.codegraph.search; print('lancedb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_hybrid_ranking_does_not_depend_on_how_many_results_are_asked_for(  # type: ignore[no-untyped-def]
    make_graph, monkeypatch
) -> None:
    """A fixed fusion pool: a longer list extends the shorter one instead of reordering it."""
    monkeypatch.setattr("engram.codegraph.search.CANDIDATES", 4)
    files = {
        f"pkg/mod{i}.py": (
            f"def handler_{i}(request):\n    '''Handle request number {i} and parse the body.'''\n"
            f"    return request.body{i}\n"
        )
        for i in range(12)
    }
    graph = make_graph(files)
    search = CodeSearch(graph.workspace, graph, HashingEmbedder())
    search.index_chunks()
    short = [(h.file, h.score) for h in search.search("parse request body", k=1)]
    long = [(h.file, h.score) for h in search.search("parse request body", k=3)]
    assert len(short) == 1 and long[:1] == short
    search.close()


GO_SOURCE = """package cobra

import "strings"

// ld compares two strings and returns the levenshtein distance between them.
func ld(s, t string, ignoreCase bool) int {
\tif ignoreCase {
\t\ts = strings.ToLower(s)
\t}
\treturn len(s) - len(t)
}

func other() int { return 1 }
"""


def test_doc_comments_above_a_definition_belong_to_its_chunk(make_graph) -> None:  # type: ignore[no-untyped-def]
    """Issue 17: Go keeps docs in comments above ``func``; ``ld``'s chunk must carry them."""
    graph = make_graph(
        {
            "cobra.go": GO_SOURCE,
            "lib.rs": "/// Parses the flags.\n#[inline]\npub fn parse_flags() -> u8 { 1 }\n",
            "Util.java": (
                "/** Joins parts with a comma. */\n@Deprecated\nclass Util {\n"
                "  static String join(String a) { return a; }\n}\n"
            ),
        }
    )
    chunks = {
        c.name: c
        for f in ("cobra.go", "lib.rs", "Util.java")
        for c in chunk_file(f, (graph.workspace.root / f).read_text(), graph.symbols_in(f))
    }
    assert chunks["ld"].content.startswith("// ld compares two strings")
    assert chunks["ld"].start_line == 5
    assert chunks["parse_flags"].content.startswith("/// Parses the flags.\n#[inline]")
    assert chunks["Util"].content.startswith("/** Joins parts with a comma. */")
    search = CodeSearch(graph.workspace, graph, None)
    search.index_chunks()
    hits = search.search("levenshtein distance", k=3)
    assert hits and hits[0].name == "ld"
    search.close()


def test_prose_ranks_below_code_for_a_query_that_names_code(make_graph) -> None:  # type: ignore[no-untyped-def]
    """Issue 17: CHANGES.md mentioning a function outranked the function itself."""
    graph = make_graph(
        {
            "loader.py": "def load_config(path):\n    return open(path).read()\n",
            "CHANGES.md": "# Changes\n\n" + "load_config load_config now reads paths.\n" * 3,
        }
    )
    search = CodeSearch(graph.workspace, graph, HashingEmbedder())
    search.index_chunks()
    assert search.search("load_config", k=2)[0].file == "loader.py"
    # a prose question may still be answered by prose
    assert any(h.file == "CHANGES.md" for h in search.search("what changed in reading", k=2))
    search.close()


def test_progress_goes_on_while_chunks_are_embedded(make_graph) -> None:  # type: ignore[no-untyped-def]
    """Issue 16: one write embeds up to thousands of chunks; progress was silent meanwhile."""
    body = "\n\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(150))
    graph = make_graph({"src/many.py": body, "src/one.py": "def g():\n    return 1\n"})
    search = CodeSearch(graph.workspace, graph, HashingEmbedder())
    seen: list[tuple[int, int, str]] = []
    report = search.index_chunks(progress=lambda done, total, msg: seen.append((done, total, msg)))
    beats = [s for s in seen if s[2].startswith("embedded ")]
    assert len(beats) >= 3  # one per embedding batch of 64, not one per write
    assert beats[-1] == (2, 2, f"embedded {report.embedded}/{report.embedded} chunks")
    assert report.embedded >= 150


def test_a_cold_keyword_index_writes_bounded_batches_and_skips_compaction(  # type: ignore[no-untyped-def]
    make_graph, monkeypatch
) -> None:
    """Issue 18: the cold index's peak RSS must follow the batch, not the repository.

    Chunks go to the store in writes of at most one batch (plus the last file's chunks),
    and the whole-table compaction that set the 58k-file peak is not run; keyword search
    still finds chunks of every write (the FTS index is built at the bulk's end).
    """
    from engram.codegraph import search as search_module
    from engram.store import ChunkStore

    monkeypatch.setattr(search_module, "WRITE_BATCH_CHUNKS", 10)
    files = {
        f"src/m{i}.py": "\n\n".join(f"def fn_{i}_{j}(x):\n    return x + {j}\n" for j in range(4))
        for i in range(12)
    }
    graph = make_graph(files)
    rows_per_add: list[int] = []
    compactions: list[int] = []
    real_replace = ChunkStore.replace_files

    def counting_replace(self, files, records, vectors=None, model_id=None):  # type: ignore[no-untyped-def]
        rows_per_add.append(len(records))
        return real_replace(self, files, records, vectors, model_id)

    monkeypatch.setattr(ChunkStore, "replace_files", counting_replace)
    monkeypatch.setattr(ChunkStore, "compact", lambda self: compactions.append(1))
    search = CodeSearch(graph.workspace, graph, None)
    report = search.index_chunks()
    assert report.chunks == sum(rows_per_add) >= 48
    assert len(rows_per_add) >= 4  # several writes, each one batch (+ one file's chunks)
    assert max(rows_per_add) < 10 + 5
    assert compactions == []
    assert search.search("fn_0_1", k=1)[0].name == "fn_0_1"
    assert search.search("fn_11_3", k=1)[0].name == "fn_11_3"
    search.close()


def test_deciding_what_to_rechunk_reads_three_columns_not_the_chunks(  # type: ignore[no-untyped-def]
    make_graph, monkeypatch
) -> None:
    """Issue 18: at 500k chunks the language server's start-up index went from 1 GB to
    4.3 GB RSS before its first file, building every chunk's code and text as Python
    objects only to learn each file's stored hash. The check now reads ``(id, file,
    content_hash)``; a re-run over unchanged files writes nothing, and a changed file is
    still re-chunked."""
    from engram.store import ChunkStore

    files = {f"src/m{i}.py": f"def fn_{i}(x):\n    return x + {i}\n" for i in range(3)}
    graph = make_graph(files)
    first = CodeSearch(graph.workspace, graph, None)
    assert first.index_chunks().files_chunked == 3
    first.close()

    def no_snapshot(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the whole chunk snapshot was built")

    monkeypatch.setattr(ChunkStore, "refresh", no_snapshot)
    again = CodeSearch(graph.workspace, graph, None)
    assert again.index_chunks().files_chunked == 0
    (graph.workspace.root / "src/m1.py").write_text("def fn_new(x):\n    return x\n")
    graph.index()
    assert again.index_chunks().files_chunked == 1
    coverage = again.coverage()
    assert coverage.chunks == 3 and coverage.embedded == 0
    monkeypatch.undo()
    assert again.search("fn_new", k=1)[0].name == "fn_new"
    again.close()


def test_a_keyword_only_run_keeps_the_vectors_of_unchanged_files(make_graph) -> None:  # type: ignore[no-untyped-def]
    """A new user's walk (stop 31): ``engram index``, then an editor opened a file, and
    ``engram doctor`` said "161 of 161 code chunks have no embedding". The language
    server's start-up index (and ``engram index --no-embed``) is keyword-only; it re-chunked
    every file a model had embedded and wrote the chunks back without vectors."""
    files = {f"src/m{i}.py": f"def fn_{i}(x):\n    return x + {i}\n" for i in range(3)}
    graph = make_graph(files)
    embedded = CodeSearch(graph.workspace, graph, HashingEmbedder())
    assert embedded.index_chunks().embedded == 3
    embedded.close()

    keyword = CodeSearch(graph.workspace, graph, None)
    assert keyword.index_chunks().files_chunked == 0
    keyword.close()
    again = CodeSearch(graph.workspace, graph, HashingEmbedder())
    assert again.coverage().embedded == 3
    again.close()

    # a changed file is still re-chunked (keyword-only); the others keep their vectors
    (graph.workspace.root / "src/m1.py").write_text("def fn_new(x):\n    return x\n")
    graph.index()
    keyword = CodeSearch(graph.workspace, graph, None)
    assert keyword.index_chunks().files_chunked == 1
    assert keyword.search("fn_new", k=1)[0].name == "fn_new"
    keyword.close()
    again = CodeSearch(graph.workspace, graph, HashingEmbedder())
    coverage = again.coverage()
    assert (coverage.chunks, coverage.embedded) == (3, 2)
    assert again.index_chunks().embedded == 1  # the next run with the model embeds it
    assert again.coverage().embedded == 3
    again.close()
