"""How `engram impact FILE:SYMBOL` reads (walk31: "references … (0): none resolved from
other files", then the file's list headed `FILE::SYMBOL`, a spelling nobody typed)."""

from __future__ import annotations

from engram.api.render import impact_text
from engram.codegraph.impact import ImpactReport


def test_a_symbol_nobody_references_reads_as_one_line_and_the_list_is_the_files() -> None:
    report = ImpactReport(target="src/signer.py", symbol="Signer.derive_key", score=0.5)
    lines = impact_text(report).splitlines()
    assert lines[0] == "references to Signer.derive_key: none resolved from other files"
    assert lines[1] == (
        "impact of src/signer.py (the file that holds Signer.derive_key; impact score 0.50)"
    )
    assert not any("::" in line or "(0)" in line for line in lines)


def test_a_file_alone_keeps_its_heading() -> None:
    lines = impact_text(ImpactReport(target="src/signer.py", score=0.25)).splitlines()
    assert lines[0] == "impact of src/signer.py (impact score 0.25)"
