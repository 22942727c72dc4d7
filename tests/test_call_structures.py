"""The optimized module is called as the model is (issue 34): every input
structure torch's pytree knows, every signature the model accepts, and
every Python branch Dynamo guarded on -- on every later call, not only the
first. Each case compares with the model itself on fresh inputs."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils import _pytree as pytree

import optimus_ir
from optimus_ir.api.guards import OptimusGuardWarning


def _same(got, want) -> None:
    got_leaves, got_spec = pytree.tree_flatten(got)
    want_leaves, want_spec = pytree.tree_flatten(want)
    assert got_spec == want_spec
    for a, b in zip(got_leaves, want_leaves):
        if isinstance(b, torch.Tensor):
            torch.testing.assert_close(a, b)
        else:
            assert a == b


class DictFeatures(nn.Module):
    """A CTR model's input: a dict of 39 feature tensors (13 dense, 26 ids)."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = nn.ModuleList(nn.Linear(1, 4) for _ in range(13))
        self.sparse = nn.ModuleList(nn.Embedding(50, 4) for _ in range(26))
        self.top = nn.Linear(39 * 4, 1)

    def forward(self, features: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        parts = [layer(features[f"I{i}"]) for i, layer in enumerate(self.dense)]
        parts += [table(features[f"C{i}"]) for i, table in enumerate(self.sparse)]
        logit = self.top(torch.cat(parts, 1))
        return {"logit": logit, "prob": torch.sigmoid(logit)}


def _features(batch: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    dense = {f"I{i}": torch.randn(batch, 1, generator=g) for i in range(13)}
    sparse = {f"C{i}": torch.randint(0, 50, (batch,), generator=g) for i in range(26)}
    return {**dense, **sparse}


@pytest.fixture(scope="module")
def dict_model():
    model = DictFeatures().eval()
    return model, optimus_ir.optimize(model, (_features(32),))


def test_a_dict_of_39_tensors_at_other_batch_sizes(dict_model) -> None:
    model, opt = dict_model
    with torch.no_grad():
        for seed, batch in enumerate((32, 64, 7, 32, 200)):
            features = _features(batch, seed + 1)
            _same(opt(features), model(features))
    guard = opt.optimus_guard
    assert guard.batch_generic is True and guard.reoptimizations == 0


def test_other_keys_are_optimized_for_and_a_missing_key_is_the_models_error(dict_model) -> None:
    model, opt = dict_model
    features = _features(16)
    extra = {**features, "unused": torch.ones(3)}
    with torch.no_grad():
        _same(opt(extra), model(extra))  # a key the model does not read: same program
        missing = dict(features)
        del missing["C3"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimusGuardWarning)
            with pytest.raises(KeyError, match="C3"):
                opt(missing)


class ListAndTuple(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linears = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def forward(self, xs: list[torch.Tensor], pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        total = sum(linear(x) for linear, x in zip(self.linears, xs))
        return total + pair[0] * pair[1]


def test_lists_tuples_and_another_length() -> None:
    model = ListAndTuple().eval()
    xs = [torch.randn(8, 4) for _ in range(3)]
    pair = (torch.randn(8, 4), torch.randn(8, 4))
    opt = optimus_ir.optimize(model, (xs, pair))
    with torch.no_grad():
        for batch in (8, 5, 12):
            xs_b = [torch.randn(batch, 4) for _ in range(3)]
            pair_b = (torch.randn(batch, 4), torch.randn(batch, 4))
            _same(opt(xs_b, pair_b), model(xs_b, pair_b))
        two = [torch.randn(8, 4) for _ in range(2)]  # zip stops at the shorter: another program
        _same(opt(two, pair), model(two, pair))
    assert opt.optimus_guard.reoptimizations == 1


@dataclasses.dataclass
class Jagged:
    """A torchrec-like jagged input: ids of every bag, one after the other,
    and the length of each bag (a registered pytree node)."""

    values: torch.Tensor
    lengths: torch.Tensor


pytree.register_dataclass(Jagged)


class BagModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = nn.EmbeddingBag(100, 8, mode="sum")
        self.dense = nn.Linear(3, 8)

    def forward(self, dense: torch.Tensor, jagged: Jagged) -> torch.Tensor:
        offsets = jagged.lengths.cumsum(0) - jagged.lengths
        return self.dense(dense) + self.table(jagged.values, offsets)


def _jagged(batch: int, seed: int) -> Jagged:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 4, (batch,), generator=g)
    return Jagged(torch.randint(0, 100, (int(lengths.sum()),), generator=g), lengths)


def test_a_registered_jagged_input_with_bags_of_other_lengths() -> None:
    model = BagModel().eval()
    opt = optimus_ir.optimize(model, (torch.randn(6, 3), _jagged(6, 0)))
    with torch.no_grad():
        for seed, batch in enumerate((6, 6, 9, 4)):
            dense, jagged = torch.randn(batch, 3), _jagged(batch, seed + 1)
            _same(opt(dense, jagged), model(dense, jagged))
    # the number of ids (and the batch) changes from call to call: proven
    # once for the ids, once for both, never optimized again
    assert opt.optimus_guard.reoptimizations == 0


class Optional(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, *, scale: float = 2.0) -> torch.Tensor:
        y = self.linear(x) * scale
        return y if mask is None else y * mask


def test_optional_arguments_keywords_and_defaults() -> None:
    model = Optional().eval()
    x, mask = torch.randn(5, 4), torch.rand(5, 4)
    opt = optimus_ir.optimize(model, (x,))
    with torch.no_grad():
        _same(opt(x, mask=mask), model(x, mask=mask))  # not seen when optimized
        _same(opt(x, mask), model(x, mask))
        _same(opt(x), model(x))
        _same(opt(x, scale=3.0), model(x, scale=3.0))
    # given as an example keyword, omitted later: the model's default applies
    opt = optimus_ir.optimize(model, (x,), example_kwargs={"mask": mask})
    with torch.no_grad():
        _same(opt(x), model(x))
        _same(opt(x, mask=mask), model(x, mask=mask))
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        opt(x, nope=1)


class Variadic(nn.Module):
    def forward(self, *xs: torch.Tensor, **named: torch.Tensor) -> torch.Tensor:
        total = sum(xs)
        for value in named.values():
            total = total * value
        return total


def test_variadic_positional_and_keyword_arguments() -> None:
    model = Variadic()
    a, b, c = torch.randn(3), torch.randn(3), torch.randn(3)
    opt = optimus_ir.optimize(model, (a, b))
    _same(opt(a, b, c), model(a, b, c))
    _same(opt(a), model(a))
    _same(opt(a, b, w=c), model(a, b, w=c))
    _same(opt(a, b), model(a, b))
    assert opt.optimus_guard.reoptimizations == 3


class Reshaped(nn.Module):
    def forward(self, x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
        return x.reshape(shape).sum(-1)


def test_a_tuple_shape_argument_that_changes() -> None:
    model = Reshaped()
    x = torch.randn(4, 6)
    opt = optimus_ir.optimize(model, (x, (4, 2, 3)))
    for shape in ((4, 2, 3), (8, 3), (2, 12), (4, 2, 3)):
        _same(opt(x, shape), model(x, shape))
    assert opt.optimus_guard.reoptimizations == 2


class Branches(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        y = y * 2 if x.requires_grad else y + 1
        y = y - 3 if x.is_contiguous() else y / 3
        return y.relu() if x.shape[0] > 1 else y.tanh()


def test_branches_on_requires_grad_layout_and_a_batch_1_example() -> None:
    model = Branches()
    opt = optimus_ir.optimize(model, (torch.randn(1, 4),))
    cases = [
        torch.randn(1, 4),
        torch.randn(6, 4),
        torch.randn(6, 4).requires_grad_(),
        torch.randn(4, 6).t(),
        torch.randn(1, 4),
        torch.randn(9, 4),
    ]
    for x in cases:
        _same(opt(x), model(x))


def test_a_branch_on_the_batch_size_is_not_generalized() -> None:
    class Sized(nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[0] > 8 else x + 1

    model = Sized()
    opt = optimus_ir.optimize(model, (torch.randn(8, 3),))
    for batch in (16, 8, 4, 32):
        x = torch.randn(batch, 3)
        _same(opt(x), model(x))


class Flagged(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.use_relu = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        return y.relu() if self.use_relu else y.sigmoid()


def test_a_flag_of_the_model_that_forward_reads_is_guarded() -> None:
    model = Flagged()
    x = torch.randn(3, 4)
    opt = optimus_ir.optimize(model, (x,))
    _same(opt(x), model(x))
    model.use_relu = False
    _same(opt(x), model(x))
    assert opt.optimus_guard.reoptimizations == 1


def test_the_guard_outlives_dynamo_reset(dict_model) -> None:
    model, opt = dict_model
    before = opt.optimus_guard.reoptimizations
    torch._dynamo.reset()  # noqa: SLF001
    features = _features(32, 9)
    with torch.no_grad():
        _same(opt(features), model(features))
    assert opt.optimus_guard.reoptimizations == before


def test_a_dispatch_mode_around_the_call_is_not_a_new_input() -> None:
    from torch.utils.flop_counter import FlopCounterMode

    model = DictFeatures().eval()
    features = _features(16)
    opt = optimus_ir.optimize(model, (features,))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        _same(opt(features), model(features))
    assert counter.get_total_flops() > 0
    assert opt.optimus_guard.reoptimizations == 0 and not opt.optimus_guard.fell_back


def test_grad_mode_made_with_grad_serves_no_grad_and_not_the_reverse() -> None:
    model = Optional()
    x = torch.randn(5, 4)
    opt = optimus_ir.optimize(model, (x,))
    with torch.no_grad():
        _same(opt(x), model(x))
    assert opt.optimus_guard.reoptimizations == 0
    with torch.no_grad():
        under_no_grad = optimus_ir.optimize(model, (x,))
    out = under_no_grad(x)
    out.sum().backward()  # made again with grad on: gradients reach the parameters
    assert model.linear.weight.grad is not None
    assert under_no_grad.optimus_guard.reoptimizations == 1


def test_a_miss_says_which_leaf_differs(dict_model, caplog: pytest.LogCaptureFixture) -> None:
    model, opt = dict_model
    features = _features(32)
    features["C0"] = features["C0"].int()
    with caplog.at_level("INFO", logger="optimus_ir.api.guards"), torch.no_grad():
        _same(opt(features), model(features))
    assert any("features['C0']: tensor [32] int32" in r.getMessage() for r in caplog.records), caplog.text


class CachingJagged:
    """A jagged input that caches its offsets on itself the first time they
    are asked for (as torchrec's KeyedJaggedTensor does)."""

    def __init__(self, values: torch.Tensor, lengths: torch.Tensor) -> None:
        self.values, self.lengths = values, lengths
        self._offsets: torch.Tensor | None = None

    def offsets(self) -> torch.Tensor:
        if self._offsets is None:
            self._offsets = self.lengths.cumsum(0) - self.lengths
        return self._offsets


pytree.register_pytree_node(
    CachingJagged,
    lambda j: ([j.values, j.lengths], None),
    lambda leaves, _: CachingJagged(*leaves),
)


class CachingBagModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = nn.EmbeddingBag(100, 8, mode="sum")

    def forward(self, jagged: CachingJagged) -> torch.Tensor:
        return self.table(jagged.values, jagged.offsets())


def _caching(batch: int, seed: int) -> CachingJagged:
    plain = _jagged(batch, seed)
    return CachingJagged(plain.values, plain.lengths)


def test_an_input_that_caches_on_itself_is_called_again() -> None:
    """Capturing replays `forward`'s attribute writes on the argument (the
    cached offsets): the caller's object is put back as it was, and the
    module sets the cache as the model does, with the real values."""
    model = CachingBagModel().eval()
    example = _caching(6, 0)
    opt = optimus_ir.optimize(model, (example,))
    assert example._offsets is None  # optimize() did not write into the caller's object
    with torch.no_grad():
        for seed, batch in enumerate((6, 9, 9, 4)):
            jagged = _caching(batch, seed + 1)
            want = model(_caching(batch, seed + 1))
            _same(opt(jagged), want)
            _same(opt(jagged), want)  # the same object again, its cache set by the first call
            torch.testing.assert_close(jagged.offsets(), jagged.lengths.cumsum(0) - jagged.lengths)


class TrainingTowers(nn.Module):
    """Side effects on every call: batch norms update their running
    statistics in training, and a buffer counts the calls in place."""

    def __init__(self) -> None:
        super().__init__()
        self.towers = nn.ModuleList(nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU()) for _ in range(4))
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return torch.cat([tower(x) for tower in self.towers], dim=1)


def test_a_graph_with_side_effects_is_optimized_for_other_batch_sizes() -> None:
    """Capturing does not run the graph, so a training graph with writes is
    proven size-generic (or optimized again) like any other; each write
    happens once per call, as in the model."""
    torch.manual_seed(0)
    model = TrainingTowers().train()
    reference = TrainingTowers().train()
    reference.load_state_dict(model.state_dict())
    opt = optimus_ir.optimize(model, (torch.randn(16, 8),))
    assert int(model.calls) == 0  # optimize() ran nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error", OptimusGuardWarning)  # never the model instead
        for batch in (16, 32, 5, 16):
            x = torch.randn(batch, 8)
            _same(opt(x), reference(x))
    for name, want in reference.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], want, msg=name)
    assert int(model.calls) == 4
    guard = opt.optimus_guard
    assert all(spec.runner is not model for spec in guard.specializations)
    assert guard.batch_generic is True


class NumpyOffsets(nn.Module):
    """torchfm's pattern: field offsets kept as a numpy array attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.offsets = np.array([0, 10, 20])
        self.embedding = nn.Embedding(30, 4)
        self.norm = nn.BatchNorm1d(12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.embedding(x + x.new_tensor(self.offsets).unsqueeze(0)).flatten(1))


def test_a_numpy_attribute_is_read_not_guarded_and_a_submodules_mode_is_guarded() -> None:
    """Dynamo's filter works on a model holding a numpy array (its guard
    would convert the array on every call, 10 us of torchfm's DeepFM); the
    array is the model's, read when the module runs, like its parameters.
    A submodule switched to training is a new program (guarded)."""
    model = NumpyOffsets().eval()
    x = torch.randint(0, 10, (8, 3))
    opt = optimus_ir.optimize(model, (x,))
    guard_text = str(opt.optimus_guard.primary.guard.manager)
    assert "from_numpy" not in guard_text and "L['x']" in guard_text
    model.offsets = np.array([5, 10, 15])
    with torch.no_grad():
        _same(opt(x), model(x))
    model.norm.train()
    y = torch.randint(0, 10, (8, 3))
    want = NumpyOffsets()
    want.load_state_dict(model.state_dict())
    want.offsets = model.offsets
    want.train()
    with torch.no_grad():
        _same(opt(y), want(y))  # batch statistics, as the model in training computes
