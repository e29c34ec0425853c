"""The page stands alone: escaped text, relative images, no script or network."""

from __future__ import annotations

from reclaim.report.html import Section, page


def test_page_is_self_contained_and_escaped():
    table = (["cell", "ours"], [["a<b", "1.00x"], ["c", "not in this result store"]])
    html = page(
        "t & u",
        ["note"],
        [Section("exp", ["n"], table, [("boxes", "exp-boxplots.png")])],
        table,
        "Pace et al., section 4.2",
    )
    assert "a&lt;b" in html and "t &amp; u" in html
    assert '<img src="exp-boxplots.png"' in html
    assert '<td class="absent">not in this result store</td>' in html
    assert "section 4.2" in html
    assert "<script" not in html and "http" not in html
