"""Issue 21, item 4: batch fusion chooses its plan over the whole graph.

On highway branches `g[i](x[i]) * sigmoid(t[i](x[i]))` each branch's two
linears read one input, so they could fuse on it (`linear_shared_input`,
2-wide groups inside a branch) or across the branches (one `batch.linear`
over the stacked inputs). The cost model prices both plans over the whole
graph -- a batched linear leaves its results batched for the sigmoid and the
mul -- and the cross-branch plan wins; where fusing on the shared input is
cheaper (one input read by several linears, nothing to batch across) it is
kept. Numerics are compared with the module before and after (fp32, a
batched matmul may sum in another order: rtol/atol 1e-5).
"""

from __future__ import annotations

import torch
from torch import nn

from optimus_ir.api import optimize

F32 = dict(rtol=1e-5, atol=1e-5)


class Highway(nn.Module):
    """`n` highway branches, each `g(x) * sigmoid(t(x))` on its own input."""

    def __init__(self, branches: int = 20, width: int = 10) -> None:
        super().__init__()
        self.g = nn.ModuleList(nn.Linear(width, width) for _ in range(branches))
        self.t = nn.ModuleList(nn.Linear(width, width) for _ in range(branches))

    def forward(self, xs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [g(x) * torch.sigmoid(t(x)) for g, t, x in zip(self.g, self.t, xs)]


class OneInputFourLinears(nn.Module):
    """Four linears of one input: two gated products."""

    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.lin = nn.ModuleList(nn.Linear(width, width) for _ in range(4))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b, c, d = (lin(x) for lin in self.lin)
        return a * torch.sigmoid(b), c * torch.sigmoid(d)


def _highway() -> tuple[Highway, list[torch.Tensor]]:
    torch.manual_seed(0)
    return Highway().eval(), [torch.randn(10, 10) for _ in range(20)]


def _fusion_remarks(gm: torch.fx.GraphModule) -> list[str]:
    return [r.message for r in gm.optimus_report.remarks if r.message.startswith("batch-fusion:")]


def test_highway_linears_fuse_across_branches_and_stay_batched() -> None:
    model, xs = _highway()
    gm = optimize(model, [xs], freeze=True)
    report = gm.optimus_report
    remarks = _fusion_remarks(gm)
    assert any("fused 40 torch.linear" in m and "into batch.linear (" in m for m in remarks), remarks
    assert any(m.startswith("batch-fusion: plan: 40 torch.linear") for m in remarks), remarks
    assert not any("linear_shared_input" in m for m in remarks), remarks
    assert any("fused 20 torch.sigmoid" in m for m in remarks), remarks
    assert any("fused 20 torch.mul" in m for m in remarks), remarks
    # one batched matmul, one sigmoid, one mul; the sigmoid and the mul read
    # the linear's stack through views (no restacking: one stack of inputs
    # and the two parameter stacks, frozen)
    after = report.ops_after
    assert "linear" not in after and after.get("baddbmm") == 1, after
    assert after.get("sigmoid") == 1 and after.get("mul") == 1, after
    assert after.get("stack") == 3, after
    assert sum(after.values()) < sum(report.ops_before.values()) == 80, after
    with torch.no_grad():
        for got, want in zip(gm(xs), model(xs)):
            torch.testing.assert_close(got, want, **F32)
        other = [torch.randn(10, 10) for _ in range(20)]
        for got, want in zip(gm(other), model(other)):
            torch.testing.assert_close(got, want, **F32)


def test_highway_plan_is_the_same_every_time() -> None:
    model, xs = _highway()
    first = optimize(model, [xs], freeze=True)
    second = optimize(model, [xs], freeze=True)
    assert first.code == second.code
    assert _fusion_remarks(first) == _fusion_remarks(second)


def test_linears_of_one_input_keep_fusing_on_it() -> None:
    torch.manual_seed(0)
    model = OneInputFourLinears().eval()
    x = torch.randn(64, 64)
    gm = optimize(model, [x], freeze=True)
    remarks = _fusion_remarks(gm)
    assert any("fused 4 torch.linear" in m and "batch.linear_shared_input" in m for m in remarks), remarks
    assert not any(m.startswith("batch-fusion: plan:") for m in remarks), remarks
    with torch.no_grad():
        for got, want in zip(gm(x), model(x)):
            torch.testing.assert_close(got, want, **F32)
