"""Checkpoints move freely between a model and the module `optimize()` made
of it (issue 34, required 5; `optimus_ir.api.model_names`).

The optimized module's `state_dict`, `load_state_dict`, `named_parameters`,
`named_buffers` and `parameters` use the model's own names and hold the
model's very Parameter and buffer objects; frozen values (`freeze=True`) are
not model state: out of the state dict, computed again when a checkpoint is
loaded into the module, and `assign=True` loads into a frozen module are
refused. Wrappers `optimize` cannot capture (DDP, DataParallel, FSDP,
`torch.compile`) raise a CaptureError that says what to do instead.

(`DDP(optimize(model)).module.state_dict()` across two processes is in
tests/test_distributed.py.)"""

from __future__ import annotations

import copy
import io
import pickle

import pytest
import torch
from torch import nn

import optimus_ir
from optimus_ir.translate.exporter import OWN_STATE_ATTRIBUTE
from optimus_ir.api.model_names import NAMED_ATTRIBUTE
from optimus_ir.api.param_cache import FROZEN_GUARD_ATTRIBUTE, frozen_values

FUSED = "raise-fx,split-cat-simplify,batch-fusion{cost-model=none},lower-batch,split-cat-simplify,canonicalize,dce,cse,lower-to-fx"
WIDTH = 8
TOWERS = 4


class Wide(nn.Module):
    """Towers of linears over pieces of the input (batch fusion stacks them),
    a batch norm (buffers, `num_batches_tracked`), a root-level parameter and
    buffers (one non-persistent), a head whose weight a second linear ties,
    and a submodule the forward never uses: every kind of state a state dict
    holds."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.towers = nn.ModuleList(nn.Linear(WIDTH, WIDTH) for _ in range(TOWERS))
        self.norm = nn.BatchNorm1d(WIDTH * TOWERS)
        self.scale = nn.Parameter(torch.rand(1) + 0.5)
        self.register_buffer("offset", torch.randn(WIDTH * TOWERS))
        self.register_buffer("cache", torch.ones(1), persistent=False)
        self.head = nn.Linear(WIDTH * TOWERS, WIDTH * TOWERS)
        self.tied = nn.Linear(WIDTH * TOWERS, WIDTH * TOWERS, bias=False)
        self.tied.weight = self.head.weight
        self.unused = nn.Linear(2, 3)
        with torch.no_grad():
            self.norm.running_mean.normal_()
            self.norm.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor, gain: float = 1.0) -> torch.Tensor:
        pieces = x.split(WIDTH, dim=1)
        h = torch.cat([torch.relu(t(p)) for t, p in zip(self.towers, pieces)], dim=1)
        h = self.norm(h) * self.scale + self.offset * self.cache
        return self.tied(torch.tanh(self.head(h))) * gain


def _x(batch: int = 5, seed: int = 1) -> torch.Tensor:
    return torch.randn(batch, WIDTH * TOWERS, generator=torch.Generator().manual_seed(seed))


def _optimize(model: nn.Module, x: torch.Tensor, **options: object) -> torch.fx.GraphModule:
    return optimus_ir.optimize(model, (x,), FUSED, **options)


# Outputs: the fused module against the model, within fp32 tolerance (a
# batched matmul sums in another order); state: bit for bit.


def _assert_same_state(ours: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor]) -> None:
    assert list(ours) == list(theirs)
    for key, value in ours.items():
        torch.testing.assert_close(value, theirs[key], rtol=0, atol=0, msg=key)


@pytest.fixture
def wide() -> tuple[Wide, torch.Tensor, torch.fx.GraphModule]:
    model = Wide().eval()
    x = _x()
    opt = _optimize(model, x)
    assert opt.optimus_report.groups_fused >= 1
    return model, x, opt


def test_state_dict_has_the_models_names_and_tensors(wide) -> None:
    model, _, opt = wide
    assert opt.__dict__[NAMED_ATTRIBUTE] is True
    ours, theirs = opt.state_dict(keep_vars=True), model.state_dict(keep_vars=True)
    assert list(ours) == list(theirs)  # names and order; `cache` (non-persistent) in neither
    assert all(ours[k] is theirs[k] for k in theirs)  # the very objects
    assert "unused.weight" in ours and "norm.num_batches_tracked" in ours and "tied.weight" in ours


def test_named_parameters_buffers_and_modules_are_the_models(wide) -> None:
    model, _, opt = wide
    for ours, theirs in (
        (opt.named_parameters(), model.named_parameters()),
        (opt.named_buffers(), model.named_buffers()),
        (opt.named_parameters(remove_duplicate=False), model.named_parameters(remove_duplicate=False)),
    ):
        ours, theirs = list(ours), list(theirs)
        assert [n for n, _ in ours] == [n for n, _ in theirs]
        assert all(a is b for (_, a), (_, b) in zip(ours, theirs))
    # parameters(): each tensor once (the tied weight too), the model's objects,
    # so an optimizer built on either updates the same tensors
    assert [id(p) for p in opt.parameters()] == [id(p) for p in model.parameters()]
    assert len(list(opt.parameters())) == len({id(p) for p in opt.parameters()})
    assert [n for n, _ in opt.named_modules()] == [n for n, _ in model.named_modules()]
    # the module's submodules are its own: switching its mode leaves the model alone
    opt.train()
    assert not model.training and not any(m.training for m in model.modules())
    opt.eval()


def test_save_from_the_optimized_module_load_into_a_fresh_model(wide) -> None:
    model, x, opt = wide
    with torch.no_grad():
        for p in opt.parameters():
            p.mul_(0.5)  # trained through the optimized module
        opt.norm.running_mean.add_(1.0)
    buffer = io.BytesIO()
    torch.save(opt.state_dict(), buffer)
    buffer.seek(0)
    fresh = Wide(seed=7).eval()
    assert fresh.load_state_dict(torch.load(buffer, weights_only=True)) is not None  # strict
    _assert_same_state(fresh.state_dict(), model.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(fresh(x), opt(x))


def test_save_from_the_model_load_into_an_optimized_module() -> None:
    source = Wide(seed=3).eval()
    with torch.no_grad():
        source.norm.running_var.fill_(1.5)
    buffer = io.BytesIO()
    torch.save(source.state_dict(), buffer)
    model, x = Wide().eval(), _x()
    opt = _optimize(model, x)
    buffer.seek(0)
    result = opt.load_state_dict(torch.load(buffer, weights_only=True))
    assert not result.missing_keys and not result.unexpected_keys
    with torch.no_grad():
        torch.testing.assert_close(opt(x), source(x))
        torch.testing.assert_close(model(x), source(x))  # the same tensors, loaded in place
    assert opt.__dict__[OWN_STATE_ATTRIBUTE].changed is False  # copied in place: the fast reads stay


def test_non_strict_load_reports_the_models_names(wide) -> None:
    model, x, opt = wide
    state = Wide(seed=4).state_dict()
    del state["head.bias"]
    state["extra"] = torch.zeros(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "head.bias"'):
        opt.load_state_dict(state)
    result = opt.load_state_dict(state, strict=False)
    assert result.missing_keys == ["head.bias"] and result.unexpected_keys == ["extra"]
    reference = Wide(seed=4).eval()
    reference.head.bias = model.head.bias
    with torch.no_grad():
        torch.testing.assert_close(opt(x), reference(x))


def test_assign_load_is_what_the_module_computes_with_and_the_model_is_unchanged(wide) -> None:
    model, x, opt = wide
    before = {k: v.clone() for k, v in model.state_dict().items()}
    source = Wide(seed=5).eval()
    opt.load_state_dict({k: v.clone() for k, v in source.state_dict().items()}, assign=True)
    assert opt.__dict__[OWN_STATE_ATTRIBUTE].changed is True
    assert opt.towers[0].weight is not model.towers[0].weight
    with torch.no_grad():
        torch.testing.assert_close(opt(x), source(x))
    _assert_same_state(model.state_dict(), before)


def test_copies_and_pickles_keep_the_whole_state_under_the_models_names(wide) -> None:
    model, x, opt = wide
    for clone in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        _assert_same_state(clone.state_dict(), model.state_dict())
        assert [n for n, _ in clone.named_buffers()] == [n for n, _ in model.named_buffers()]
        assert clone.towers[0].weight is not model.towers[0].weight  # a copy holds its own tensors
        with torch.no_grad():
            torch.testing.assert_close(clone(x), model(x))
            clone.towers[1].weight.add_(1.0)
            assert not torch.equal(clone(x), model(x))  # and computes with them


def test_freeze_state_dict_is_the_models_and_frozen_values_are_not_state() -> None:
    model, x = Wide().eval(), _x()
    opt = _optimize(model, x, freeze=True)
    assert opt.optimus_report.cached_parameter_values >= 1
    _assert_same_state(opt.state_dict(), model.state_dict())
    frozen = {n for n, _ in opt.named_buffers()} - {n for n, _ in model.named_buffers()}
    assert frozen and all(n.startswith("frozen_") for n in frozen)
    fresh = Wide(seed=9).eval()
    fresh.load_state_dict(opt.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(fresh(x), opt(x))


def test_loading_into_a_frozen_module_computes_the_frozen_values_again() -> None:
    model, x = Wide().eval(), _x()
    opt = optimus_ir.optimize(model, (x,), FUSED, freeze=True, example_kwargs={"gain": 1.0})
    with torch.no_grad():
        opt(x, gain=2.0)  # another value of `gain`: a module optimized (and frozen) for it
    specialized = opt.optimus_guard.modules()
    assert any(frozen_values(m) for m in specialized)
    source = Wide(seed=6).eval()
    stale = [v.clone() for v in frozen_values(opt)]
    result = opt.load_state_dict(source.state_dict())
    assert not result.missing_keys
    assert any(not torch.equal(a, b) for a, b in zip(stale, frozen_values(opt)))
    with torch.no_grad():
        torch.testing.assert_close(opt(x, gain=1.0), source(x))
        torch.testing.assert_close(opt(x, gain=2.0), source(x, 2.0))
        for batch in (3, 7):  # the same module, proved batch-generic
            y = _x(batch=batch, seed=batch)
            torch.testing.assert_close(opt(y, gain=1.0), source(y))
    # what the module's frozen guard ties gradients to: the loaded tensors
    guard = getattr(opt, FROZEN_GUARD_ATTRIBUTE)
    names = dict(opt.named_parameters())
    assert all(any(s is p for p in names.values()) for s in guard.sources if isinstance(s, nn.Parameter))


class Converted(nn.Module):
    """Weights read in double precision and concatenated: `freeze=True`
    freezes the concatenation, which holds converted copies (no view of the
    parameters can stand in for them)."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.weights = nn.ParameterList(nn.Parameter(torch.randn(4, 4)) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.double() @ torch.cat([w.double() for w in self.weights], dim=1)


def test_loading_refreshes_frozen_values_that_are_converted_copies() -> None:
    model, x = Converted(), torch.randn(2, 4)
    opt = optimus_ir.optimize(model, (x,), freeze=True, check_speed=False)
    assert opt.optimus_report.cached_parameter_values == 1 and opt.optimus_report.parameter_copy_bytes > 0
    source = Converted(seed=1)
    opt.load_state_dict(source.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(opt(x), source(x), rtol=0, atol=0)


def test_assign_load_into_a_frozen_module_is_refused_before_anything_changes() -> None:
    model, x = Wide().eval(), _x()
    opt = _optimize(model, x, freeze=True)
    with torch.no_grad():
        expected = opt(x)
    state = {k: v + 1 for k, v in Wide(seed=8).state_dict().items()}
    with pytest.raises(RuntimeError, match=r"freeze=True.*assign=True"):
        opt.load_state_dict(state, assign=True)
    with torch.no_grad():
        torch.testing.assert_close(opt(x), expected, rtol=0, atol=0)


def test_a_model_whose_forward_assigns_attributes_shows_its_state(recwarn) -> None:
    class Counting(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.calls = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.calls += 1
            self.last = x.sum()
            return self.proj(x)

    model = Counting()
    opt = optimus_ir.optimize(model, (torch.randn(2, 4),), strict=False)
    assert "runs unoptimized" in (opt.optimus_report.fallback or "")
    assert list(opt.state_dict(keep_vars=True)) == ["proj.weight", "proj.bias"]
    assert opt.state_dict(keep_vars=True)["proj.weight"] is model.proj.weight
    opt(torch.randn(2, 4))
    assert model.calls == 1


def test_the_model_reassigning_a_parameter_still_is_followed(wide) -> None:
    model, x, opt = wide
    model.towers[2].weight = nn.Parameter(torch.zeros(WIDTH, WIDTH))
    with torch.no_grad():
        torch.testing.assert_close(opt(x), model(x))


# ---------------------------------------------------------------------------
# Wrappers optimize() refuses
# ---------------------------------------------------------------------------


def test_optimizing_a_compiled_module_says_what_to_do() -> None:
    model, x = Wide().eval(), _x()
    with pytest.raises(optimus_ir.CaptureError, match=r"_orig_mod.*backend=\"optimus\""):
        optimus_ir.optimize(torch.compile(model), (x,))


def test_optimizing_data_parallel_says_what_to_do() -> None:
    model, x = Wide().eval(), _x()
    with pytest.raises(optimus_ir.CaptureError, match=r"ddp\.module.*backend=\"optimus\""):
        optimus_ir.optimize(nn.DataParallel(model), (x,))


@pytest.fixture
def process_group(tmp_path):
    """A gloo process group of one (this process), for DDP and FSDP."""
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not built")
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        yield dist
    finally:
        dist.destroy_process_group()


def test_optimizing_ddp_and_fsdp_says_what_to_do(process_group) -> None:
    model, x = Wide().eval(), _x()
    with pytest.raises(optimus_ir.CaptureError, match=r"DistributedDataParallel.*ddp\.module"):
        optimus_ir.optimize(nn.parallel.DistributedDataParallel(model), (x,))
    from torch.distributed.fsdp import fully_shard

    sharded = fully_shard(Wide().eval())
    with pytest.raises(optimus_ir.CaptureError, match=r"sharded.*backend=\"optimus\""):
        optimus_ir.optimize(sharded, (x,))


def test_ddp_of_the_optimized_module_saves_the_models_checkpoint(process_group) -> None:
    """`DDP(optimize(model)).module.state_dict()` loads into the model (two
    processes, with training: tests/test_distributed.py)."""
    model, x = Wide().train(), _x()
    ddp = nn.parallel.DistributedDataParallel(_optimize(model, x))
    ddp(x).square().mean().backward()
    assert all(p.grad is not None for p in model.parameters() if p is not model.unused.weight and p is not model.unused.bias)
    state = ddp.module.state_dict()
    fresh = Wide(seed=11).train()
    fresh.load_state_dict(state)
    _assert_same_state(fresh.state_dict(), model.state_dict())
    assert ddp.module.__dict__[OWN_STATE_ATTRIBUTE].changed is False  # DDP reassigned nothing


def test_a_full_size_optimized_module_pickles_and_copies() -> None:
    """The 64-tower model with every group fused (~460 nodes, 40 remarks):
    pickling once recursed past Python's limit through the report's remarks
    (each held its xDSL op, which links to the whole module), and a node
    calling a `torch.Tensor` method (`unfold`) could not be written back as
    source on unpickling. A copy (pickled or deep-copied) keeps the report,
    the remarks' messages, and computes the same values."""
    from optimus_ir.examples.recsys import VARIANTS, make_recsys_model

    model, (x,) = make_recsys_model(num_towers=64, batch=64, seed=0, **VARIANTS["mixed"])
    model.eval()
    with torch.no_grad():
        opt = optimus_ir.optimize(model, (x,), check_speed=False, cost_model="none")
        want = opt(x)
        assert any(n.op == "call_method" and n.target == "unfold" for n in opt.graph.nodes)
        for clone in (pickle.loads(pickle.dumps(opt)), copy.deepcopy(opt)):
            assert torch.equal(clone(x), want)
        # both copies keep the report (deepcopy once dropped it), its remarks without their ops
        for clone in (pickle.loads(pickle.dumps(opt)), copy.deepcopy(opt)):
            remarks = clone.optimus_report.remarks
            assert [r.message for r in remarks] == [r.message for r in opt.optimus_report.remarks]
            assert all(r.op is None for r in remarks)
            assert clone.optimus_report.format() == opt.optimus_report.format()
    assert opt.optimus_report.remarks[0].op is not None  # the original keeps its ops
