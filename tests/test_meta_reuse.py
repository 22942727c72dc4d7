"""Import reuses the metadata Dynamo attached (`example_value` FakeTensors:
shape, dtype, device, strides) instead of propagating shapes again, on both
paths that capture with Dynamo: `optimize(module)` and the torch.compile
backend. Shape propagation runs only for a graph whose nodes lack it."""

from __future__ import annotations

import torch
import torch.fx
from torch import nn

import optimus_ir
from optimus_ir.translate import importer


class Towers(nn.Module):
    def __init__(self, towers: int = 4, width: int = 8) -> None:
        super().__init__()
        self.width = width
        self.linears = nn.ModuleList(nn.Linear(width, width) for _ in range(towers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(x, self.width, 1)
        return torch.cat([torch.relu(layer(pieces[i])) for i, layer in enumerate(self.linears)], 1)


def _no_propagation(monkeypatch) -> list[str]:
    calls: list[str] = []

    def refuse(gm, example_inputs):  # noqa: ANN001
        calls.append("propagated")
        raise AssertionError("shapes were propagated although Dynamo's metadata was there")

    monkeypatch.setattr(importer, "_propagate_fake", refuse)
    return calls


def test_optimize_of_a_module_reads_dynamos_metadata(monkeypatch) -> None:
    calls = _no_propagation(monkeypatch)
    model = Towers().eval()
    x = torch.randn(4, 32)
    with torch.no_grad():
        result = optimus_ir.optimize(model, (x,), strict=True, check_speed=False)
        torch.testing.assert_close(result(x), model(x))
    assert calls == [] and result.optimus_report.groups_fused > 0


def test_the_backend_reads_dynamos_metadata(monkeypatch) -> None:
    calls = _no_propagation(monkeypatch)
    torch._dynamo.reset()
    model = Towers().eval()
    x = torch.randn(4, 32)
    backend = optimus_ir.backend(strict=True, inner="eager")
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend=backend)(x), model(x))
    assert calls == [] and backend.outcomes and all(o.optimized for o in backend.outcomes)


def test_a_graph_without_metadata_is_propagated() -> None:
    model = Towers().eval()
    gm = torch.fx.symbolic_trace(model)
    x = torch.randn(4, 32)
    assert all("val" not in n.meta for n in gm.graph.nodes)
    with torch.no_grad():
        result = optimus_ir.optimize(gm, (x,), strict=True, check_speed=False)
        torch.testing.assert_close(result(x), model(x))
