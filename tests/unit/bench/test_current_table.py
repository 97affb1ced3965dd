"""``compare.py --record`` rewrites the rows of the runs it measured in the current table of
docs/benchmarks.md and leaves the rest of the document alone; no benchmark runs here."""

from __future__ import annotations

import pytest
from compare import FULL, NEW_ROW_DETAILS, RECORD, TIMES, Run, measured, runs
from current_table import END, START, Measured, rewrite, run_of

HEADER = "| what is measured | command | figure | ratios | date | details |"
SEPARATOR = "| --- | --- | --- | --- | --- | --- |"
KEYED = (
    "| `ours-keyed`: a keyed count, K = 100,000 | `python bench/compare.py` | **3,000,000** "
    f"events/s | **0.2** {TIMES} `ceiling-dict-2` (goal >= 0.5); **30** {TIMES} `bytewax` "
    "| 2026-11-20 | [keyed](#keyed) |"
)
CEILING = (
    "| `ceiling-dict-2`: a dict | `python bench/compare.py` | **15,000,000** | - | 2026-11-20 | - |"
)
BY_HAND = (
    "| Start-up: run to first record | `python bench/startup.py` | 4.01 s | - | 2026-11-26 | - |"
)


def document(*rows: str) -> str:
    table = "\n".join([HEADER, SEPARATOR, *rows])
    return f"# Benchmarks\n\nBefore.\n\n{START}\n{table}\n{END}\n\n## After\n\nText.\n"


def keyed(**changes) -> Measured:
    fields = {
        "run": "ours-keyed",
        "what": "`ours-keyed`: keyed count",
        "command": "`python bench/compare.py --only keyed --record`",
        "figure": "**3,700,000** events/s",
        "ratios": (("ceiling-dict-2", f"**0.179** {TIMES} `ceiling-dict-2` (goal >= 0.5)"),),
        "date": "2026-11-26",
    }
    return Measured(**(fields | changes))


def rows_of(text: str) -> list[list[str]]:
    block = text[text.index(START) : text.index(END)].splitlines()[3:]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in block]


def test_a_record_rewrites_the_command_figure_ratios_and_date_of_the_runs_it_measured():
    (row, ceiling, by_hand) = rows_of(rewrite(document(KEYED, CEILING, BY_HAND), [keyed()], "-"))

    assert row[0] == "`ours-keyed`: a keyed count, K = 100,000"  # the description as written
    assert row[1:3] == ["`python bench/compare.py --only keyed --record`", "**3,700,000** events/s"]
    assert row[4:] == ["2026-11-26", "[keyed](#keyed)"]  # the link as written
    assert ceiling == [c.strip() for c in CEILING.strip("|").split(" | ")]
    assert by_hand == [c.strip() for c in BY_HAND.strip("|").split(" | ")]


def test_everything_outside_the_rows_it_measured_stays_as_it_was():
    before = document(KEYED, CEILING, BY_HAND)
    after = rewrite(before, [keyed()], "-")

    assert after.replace(after.splitlines()[7], KEYED) == before
    assert rewrite(before, [], "-") == before


def test_ratios_to_runs_not_measured_stay_marked_as_from_an_earlier_run_once():
    text = rewrite(document(KEYED), [keyed()], "-")
    (row,) = rows_of(text)
    assert row[3] == (
        f"**0.179** {TIMES} `ceiling-dict-2` (goal >= 0.5); **30** {TIMES} `bytewax` (earlier run)"
    )

    (again,) = rows_of(rewrite(text, [keyed()], "-"))
    assert again[3] == row[3]


def test_a_ratio_measured_again_replaces_the_earlier_one():
    bytewax = ("bytewax", f"**34** {TIMES} `bytewax`")
    (row,) = rows_of(rewrite(document(KEYED), [keyed(ratios=(bytewax,))], "-"))

    assert (
        row[3]
        == f"**34** {TIMES} `bytewax`; **0.2** {TIMES} `ceiling-dict-2` (goal >= 0.5) (earlier run)"
    )


def test_a_run_new_to_the_table_gets_a_row_at_its_end_with_the_details_given():
    new = keyed(run="ours-windows", what="`ours-windows`: windows", ratios=())
    rows = rows_of(rewrite(document(KEYED, BY_HAND), [new], "[method](#method)"))

    assert rows[-1] == [
        "`ours-windows`: windows",
        "`python bench/compare.py --only keyed --record`",
        "**3,700,000** events/s",
        "-",
        "2026-11-26",
        "[method](#method)",
    ]
    assert len(rows) == 3


def test_a_pipe_in_a_cell_is_escaped_so_that_the_row_keeps_its_columns():
    text = rewrite(document(CEILING), [keyed(figure="a | b")], "-")

    assert "| a \\| b |" in text
    assert rewrite(text, [], "-") == text


@pytest.mark.parametrize(
    "text",
    [
        f"# Benchmarks\n\n{HEADER}\n{SEPARATOR}\n{KEYED}\n",
        f"{START}\n{HEADER}\n{SEPARATOR}\n",
        f"{END}\n{HEADER}\n{SEPARATOR}\n{START}\n",
    ],
    ids=["no markers", "no end", "end first"],
)
def test_a_document_without_its_two_markers_is_refused_naming_them(text):
    with pytest.raises(ValueError, match="current-table:start"):
        rewrite(text, [keyed()], "-")


def test_a_table_of_other_columns_is_refused():
    text = f"{START}\n| run | events/s |\n| --- | --- |\n{END}\n"

    with pytest.raises(ValueError, match="what is measured, command"):
        rewrite(text, [keyed()], "-")


def test_a_row_belongs_to_the_run_named_first_in_its_first_cell():
    assert run_of("`ours-keyed`: a keyed count (`ceiling-dict-2` aside)") == "ours-keyed"
    assert run_of("Start-up: `barrierflow run`") is None


def run(name: str, group: str = "keyed") -> Run:
    return Run(name, group, f"what {name} is", ())


def figures(*rates: float, rss: float = 100.0) -> list[dict]:
    return [{"events_per_s": r, "events": 1000, "peak_rss_mib": rss} for r in rates]


def test_each_run_measured_gets_the_ratios_it_is_the_numerator_of():
    selected = [run("ours-rocksdb"), run("ceiling-rocksdict"), run("bytewax-rocksdb-keys")]
    results = {
        "ours-rocksdb": figures(300.0, 400.0, 350.0, rss=60.0),
        "ceiling-rocksdict": figures(700.0, 700.0, 700.0),
        "bytewax-rocksdb-keys": figures(35.0, 35.0, 35.0),
    }

    ours, ceiling, peer = measured(selected, results, "python bench/compare.py", "2026-12-01")

    assert ours == Measured(
        "ours-rocksdb",
        "`ours-rocksdb`: what ours-rocksdb is",
        "`python bench/compare.py`",
        "**350** events/s over 1,000 events (rounds 300 / 400 / 350); peak RSS 60 MiB",
        (
            ("ceiling-rocksdict", f"**0.5** {TIMES} `ceiling-rocksdict` (goal >= 0.5)"),
            (
                "bytewax-rocksdb-keys",
                f"peak RSS **0.6** {TIMES} `bytewax-rocksdb-keys` (goal <= 1)",
            ),
        ),
        "2026-12-01",
    )
    assert ceiling.ratios == () and peer.ratios == ()


def test_a_run_that_failed_in_every_round_is_not_recorded_and_one_that_failed_once_says_so():
    selected = [run("ours-keyed"), run("ceiling-dict-2")]
    results = {
        "ours-keyed": [*figures(10.0, 12.0), {"error": "exit code 1"}],
        "ceiling-dict-2": [{"error": "exit code 1"}],
    }

    (ours,) = measured(selected, results, "c", "d")

    assert ours.run == "ours-keyed" and "(rounds 10 / 12 (1 failed))" in ours.figure
    assert ours.ratios == ()


def test_the_benchmarks_document_holds_a_table_a_record_can_rewrite():
    text = RECORD.read_text()
    names = {r.name for r in runs(FULL, "")}
    rows = rows_of(text)

    assert rewrite(text, [], NEW_ROW_DETAILS) == text
    assert names <= {run_of(row[0]) for row in rows}  # every run has its row
    anchor = NEW_ROW_DETAILS.split("#", 1)[1].removesuffix(")")
    assert f"\n## {anchor.replace('-', ' ').capitalize()}\n" in text
