"""The docs' benchmark and guarantees charts are drawn from the tables of docs/benchmarks.md and
docs/guarantees.md, and the committed SVGs match what ``tools/docs_charts.py`` draws from them now (a new
benchmark output needs the script re-run)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TOOL = runpy.run_path(str(ROOT / "tools/docs_charts.py"), run_name="docs_charts")


def test_committed_figures_match_the_pages_tables() -> None:
    figures = TOOL["figures"](ROOT.joinpath("docs/benchmarks.md").read_text(encoding="utf-8"))
    assert set(figures) == {path.name for path in (ROOT / "docs/figures").glob("*.svg")}
    for name, svg in figures.items():
        assert (ROOT / "docs/figures" / name).read_text(encoding="utf-8") == svg, f"{name}: run tools/docs_charts.py"


def test_a_changed_table_changes_the_chart(tmp_path: Path) -> None:
    page = ROOT.joinpath("docs/benchmarks.md").read_text(encoding="utf-8")
    before = TOOL["figures"](page)["bench-throughput.svg"]
    assert "tensorboard, threads: 800,676" in before  # the throughput table's median, as a bar's tooltip
    changed = page.replace("800,676", "111,111", 1)
    after = TOOL["figures"](changed)["bench-throughput.svg"]
    assert "tensorboard, threads: 111,111" in after and after != before
    tmp_path.joinpath("benchmarks.md").write_text(changed, encoding="utf-8")
    assert TOOL["main"](["--benchmarks", str(tmp_path / "benchmarks.md"), "--check"]) == 1


def test_every_scenario_with_counts_is_a_bar() -> None:
    svg = (ROOT / "docs/figures/guarantees.svg").read_text(encoding="utf-8")
    delivered = re.findall(r"<title>[^<]*, delivered: ([\d.,]+)</title>", svg)
    assert len(delivered) >= 20  # the table's rows, variants split, the one without counts left out
    assert ", lost: " not in svg.replace(", lost: 0</title>", "")  # no bar has a lost part
