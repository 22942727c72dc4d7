"""`make demo` end to end (small): both models optimize and match."""

from __future__ import annotations

from examples import demo


def test_demo_reports_and_matches(capsys) -> None:
    assert demo.main(["--towers", "4"]) == 0
    out = capsys.readouterr().out
    assert out.count("result: OK (outputs match the original model)") == 2
    from optimus_ir.passes.registry import DEFAULT_PIPELINE

    assert f"pipeline: {DEFAULT_PIPELINE}" in out
    plumbing = out.split("== split/cat plumbing model")[1]
    before, after = next(
        line.split()[1:] for line in plumbing.splitlines() if line.startswith("total ")
    )
    assert int(after) < int(before)  # split-cat-simplify removed plumbing
    assert "max abs difference vs. the original model: 0" in out
