"""The model zoo: recommendation models written by others, as their users build and call them.

Issue 34: users tried optimus-ir on FuxiCTR, torchrec and torchfm models.
This module builds those models and fresh input batches in each library's
own input structure, without importing optimus_ir (the tests and
`benchmarks/bench_zoo.py` optimize and compare them). The packages are
installed by `make test` (the `.venv/.zoo` stamp:
`benchmarks/zoo_requirements.txt`, every package pinned and installed with
`--no-deps`); a model whose library is missing says so in
`ZooModel.missing()`.

The models (`ZOO`, by name):

* FuxiCTR 2.3.10, the models its wheel ships (`model_zoo.LongCTR`, the
  long-sequence CTR models, unmodified): `fuxictr.DCNv2`, `fuxictr.FinalMLP`
  and `fuxictr.DIN` (target attention with Dice). Input: the LongCTR data
  loader's batch, one tuple `(batch_dict, item_dict, mask)`: the user-side
  features (and the meta columns and label the loader also puts there, which
  the models skip), the item features of the user's `SEQUENCE_LENGTH` past
  items and the target item flattened to `batch * (SEQUENCE_LENGTH + 1)` rows,
  and the sequence mask (`batch x SEQUENCE_LENGTH`, float, left padded as the
  loader pads).
* FuxiCTR models composed here from its classes, because the classic
  models live in FuxiCTR's source repository, not in any package:
  `fuxictr.DeepFM` (`BaseModel` with `FeatureEmbedding`,
  `FactorizationMachine` and `MLP_Block`) and the multi-task `fuxictr.MMoE`
  (`MultiTaskModel` with `MLP_Block` experts, softmax gates and towers;
  two tasks, dict in and dict out). Input: a dict of Criteo's 39 features,
  13 numeric (`I1`..`I13`, float) and 26 categorical (`C1`..`C26`, int64).
* torchrec 1.8.0 (with fbgemm-gpu-cpu 1.8.0): `torchrec.DLRM`,
  `torchrec.DLRM_DCN` and `torchrec.DeepFM` (`SimpleDeepFMNN`) over an
  `EmbeddingBagCollection` of 8 sparse features. Input: `(dense,
  KeyedJaggedTensor)`, the bag of each (sample, feature) 0 to 3 ids long,
  drawn afresh: the values' length differs from batch to batch, even at one
  batch size.
* torchfm 0.7.0: `torchfm.FFM` (`FieldAwareFactorizationMachineModel`, which
  keeps its field offsets as a numpy array attribute) and `torchfm.DeepFM`
  (`DeepFactorizationMachineModel`, batch norm in its MLP). Input: one
  `LongTensor` of field indices, `batch x fields`.

FuxiCTR's package imports its data pipeline's libraries (ray, polars, h5py)
at module level from modules that building and calling a model never run:
`fuxictr_imports()` shims exactly those three while it imports the model
classes, and only where they are not installed (see its docstring).

`build(name, train=False, seed=0)` is the model (seeded parameters, eval or
train mode); `make_inputs(name, batch, seed)` is a fresh input batch; the
model's call is `model(*inputs)`.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

FUXICTR_VERSION = "2.3.10"
TORCHREC_VERSION = "1.8.0"
TORCHFM_VERSION = "0.7.0"

NUMERIC_FEATURES = tuple(f"I{i}" for i in range(1, 14))
CATEGORICAL_FEATURES = tuple(f"C{i}" for i in range(1, 27))
"""Criteo's 13 numeric and 26 categorical features (the dict models' input)."""
CATEGORICAL_VOCABULARY = 50
EMBEDDING_DIM = 8

SEQUENCE_LENGTH = 8
"""Past items per user in the LongCTR batches (the loader's `max_len`: every
batch is padded to it, as the loader pads when some user of the batch has
that many items or more)."""
ITEM_VOCABULARY, CATEGORY_VOCABULARY, USER_VOCABULARY = 200, 20, 100

SPARSE_FEATURES = tuple(f"s{i}" for i in range(8))
"""torchrec's sparse features (one embedding table each)."""
DENSE_FEATURES = 13
SPARSE_VOCABULARY = 100
MAX_BAG = 3

TORCHFM_FIELDS = (10, 20, 30, 40, 50, 7, 3, 12)
"""torchfm's `field_dims`: the vocabulary of each field."""

SHIMMED_MODULES = (
    "ray",
    "ray.data",
    "ray.data.datasource",
    "ray.data.datasource.filename_provider",
    "polars",
    "h5py",
)
"""What `fuxictr_imports` stands in for (where not installed): the data
pipeline's libraries, imported at module level by `fuxictr.preprocess`
(dataset building: ray, polars; HDF5 tokenizer: h5py) and `fuxictr.metrics`
(grouped metrics: polars), which `fuxictr.pytorch.models` and the
embedding layers import. Building a model and calling it never reach them."""


# ---------------------------------------------------------------------------
# FuxiCTR


class _NotInstalled:
    """A name of a shimmed module: usable as a base class at import time,
    an error when anything instantiates it."""

    shimmed_module = "?"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ModuleNotFoundError(
            f"{self.shimmed_module} is not installed: the model zoo shims it for FuxiCTR's imports only "
            "(benchmarks/zoo_models.py, fuxictr_imports)"
        )


def _shim_module(name: str) -> types.ModuleType:
    module = types.ModuleType(name, f"Stand-in for {name}, which FuxiCTR imports but its models never use.")

    def __getattr__(attribute: str) -> type:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return type(attribute, (_NotInstalled,), {"shimmed_module": name})

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__path__ = []  # a package: its submodules are shimmed too
    return module


@contextlib.contextmanager
def fuxictr_imports() -> Iterator[None]:
    """Import FuxiCTR's model classes with `SHIMMED_MODULES` standing in
    for the data pipeline's libraries where they are not installed. The
    stand-ins are in `sys.modules` only while this runs (FuxiCTR's modules
    keep their references; nothing else sees them), so a test process that
    imports polars or ray for real afterwards gets the real one."""
    tops = {name.split(".")[0] for name in SHIMMED_MODULES}
    missing = {top for top in tops if top not in sys.modules and importlib.util.find_spec(top) is None}
    added = [name for name in SHIMMED_MODULES if name.split(".")[0] in missing]
    for name in added:
        sys.modules[name] = _shim_module(name)
    try:
        yield
    finally:
        for name in added:
            sys.modules.pop(name, None)


def _fuxictr() -> types.SimpleNamespace:
    """FuxiCTR's classes the zoo uses (imported once, under the shims)."""
    cached = _LIBRARY_CACHE.get("fuxictr")
    if cached is None:
        with fuxictr_imports():
            features = importlib.import_module("fuxictr.features")
            models = importlib.import_module("fuxictr.pytorch.models")
            layers = importlib.import_module("fuxictr.pytorch.layers")
            long_ctr = importlib.import_module("model_zoo.LongCTR")
        cached = types.SimpleNamespace(
            FeatureMap=features.FeatureMap,
            BaseModel=models.BaseModel,
            MultiTaskModel=models.MultiTaskModel,
            layers=layers,
            long_ctr=long_ctr,
        )
        _LIBRARY_CACHE["fuxictr"] = cached
    return cached


_LIBRARY_CACHE: dict[str, Any] = {}

_FUXICTR_TRAINING = dict(
    optimizer="SGD", loss="binary_crossentropy", verbose=0, model_root="build/zoo_checkpoints",
    metrics=["logloss"],
)
"""The keywords FuxiCTR's `BaseModel` requires (its experiment config's
training section); nothing is written there unless a model is saved."""


def criteo_feature_map(labels: tuple[str, ...] = ("click",)) -> Any:
    """A FuxiCTR `FeatureMap` of Criteo's 39 features, as `FeatureMap.load`
    builds it from a dataset's feature_map.json."""
    fuxictr = _fuxictr()
    feature_map = fuxictr.FeatureMap("criteo_zoo", "build/zoo_data")
    for name in NUMERIC_FEATURES:
        feature_map.features[name] = {"source": "", "type": "numeric"}
    for name in CATEGORICAL_FEATURES:
        feature_map.features[name] = {
            "source": "", "type": "categorical", "vocab_size": CATEGORICAL_VOCABULARY, "padding_idx": 0,
        }
    feature_map.labels = list(labels)
    feature_map.default_emb_dim = EMBEDDING_DIM
    feature_map.num_fields = feature_map.get_num_fields()
    feature_map.set_column_index()
    return feature_map


def long_ctr_feature_map() -> Any:
    """A FuxiCTR `FeatureMap` of a LongCTR dataset: three user features,
    two item features (source "item": id and category) and the meta columns
    the loader passes along (user and item index, sequence length)."""
    fuxictr = _fuxictr()
    feature_map = fuxictr.FeatureMap("longctr_zoo", "build/zoo_data")
    features = {
        "user_id": {"source": "user", "type": "categorical", "vocab_size": USER_VOCABULARY, "padding_idx": 0},
        "age": {"source": "user", "type": "categorical", "vocab_size": 10, "padding_idx": 0},
        "activity": {"source": "user", "type": "numeric"},
        "item_id": {"source": "item", "type": "categorical", "vocab_size": ITEM_VOCABULARY, "padding_idx": 0},
        "cate_id": {"source": "item", "type": "categorical", "vocab_size": CATEGORY_VOCABULARY, "padding_idx": 0},
        "user_index": {"type": "meta"},
        "item_index": {"type": "meta"},
        "seq_len": {"type": "meta"},
    }
    feature_map.features.update(features)
    feature_map.labels = ["click"]
    feature_map.default_emb_dim = EMBEDDING_DIM
    feature_map.num_fields = feature_map.get_num_fields()
    feature_map.set_column_index()
    return feature_map


def _build_long_ctr(class_name: str, **options: Any) -> nn.Module:
    fuxictr = _fuxictr()
    model_class = getattr(fuxictr.long_ctr, class_name)
    return model_class(long_ctr_feature_map(), embedding_dim=EMBEDDING_DIM, **options, **_FUXICTR_TRAINING)


def _long_ctr_inputs(batch: int, generator: torch.Generator) -> tuple[Any, ...]:
    lengths = torch.randint(1, SEQUENCE_LENGTH + 1, (batch,), generator=generator)
    positions = torch.arange(SEQUENCE_LENGTH).expand(batch, SEQUENCE_LENGTH)
    mask = (positions >= SEQUENCE_LENGTH - lengths.unsqueeze(1)).float()  # left padded, as the loader pads
    items = torch.randint(1, ITEM_VOCABULARY, (batch, SEQUENCE_LENGTH + 1), generator=generator)
    items[:, :-1] *= mask.long()  # padding is item 0
    categories = (items % (CATEGORY_VOCABULARY - 1) + 1) * (items > 0)
    batch_dict = {
        "user_id": torch.randint(1, USER_VOCABULARY, (batch,), generator=generator),
        "age": torch.randint(1, 10, (batch,), generator=generator),
        "activity": torch.rand(batch, generator=generator, dtype=torch.float64),
        "user_index": torch.arange(batch, dtype=torch.float64),
        "item_index": items[:, -1].double(),
        "seq_len": lengths.double(),
        "click": torch.randint(0, 2, (batch,), generator=generator).double(),
    }
    item_dict = {"item_id": items.flatten(), "cate_id": categories.flatten()}
    return ((batch_dict, item_dict, mask),)


def _fuxictr_deepfm_class() -> type:
    """DeepFM as a FuxiCTR model: FuxiCTR's `BaseModel` (input handling,
    output activation, parameter reset) with its `FeatureEmbedding`,
    `FactorizationMachine` (first order and pairwise terms) and a
    `MLP_Block` over the flattened embeddings. Returns `{"y_pred": ...}`."""
    cached = _LIBRARY_CACHE.get("fuxictr.DeepFM")
    if cached is not None:
        return cached
    fuxictr = _fuxictr()
    layers = fuxictr.layers

    class DeepFM(fuxictr.BaseModel):
        """DeepFM (Guo et al., 2017) of FuxiCTR's layers."""

        def __init__(self, feature_map: Any, hidden_units: tuple[int, ...] = (64, 64, 64), **kwargs: Any) -> None:
            super().__init__(feature_map, model_id="DeepFM", **kwargs)
            self.embedding_layer = layers.FeatureEmbedding(feature_map, EMBEDDING_DIM)
            self.fm = layers.FactorizationMachine(feature_map)
            self.mlp = layers.MLP_Block(
                input_dim=feature_map.sum_emb_out_dim(), output_dim=1, hidden_units=list(hidden_units),
                hidden_activations="ReLU",
            )
            self.compile(kwargs["optimizer"], kwargs["loss"], 1e-3)
            self.reset_parameters()
            self.model_to_device()

        def forward(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
            """FuxiCTR's convention: a dict of features in, `{"y_pred": ...}` out."""
            X = self.get_inputs(inputs)
            feature_emb = self.embedding_layer(X)
            y_pred = self.fm(X, feature_emb) + self.mlp(feature_emb.flatten(start_dim=1))
            return {"y_pred": self.output_activation(y_pred)}

    _LIBRARY_CACHE["fuxictr.DeepFM"] = DeepFM
    return DeepFM


def _fuxictr_mmoe_class() -> type:
    """MMoE (Ma et al., 2018) as a FuxiCTR multi-task model: FuxiCTR's
    `MultiTaskModel` (one output activation per task) with its
    `FeatureEmbedding`, `MLP_Block` experts, softmax gates over the experts
    and one `MLP_Block` tower per task. Returns `{"<label>_pred": ...}`."""
    cached = _LIBRARY_CACHE.get("fuxictr.MMoE")
    if cached is not None:
        return cached
    fuxictr = _fuxictr()
    layers = fuxictr.layers

    class MMoE(fuxictr.MultiTaskModel):
        """Multi-gate mixture of experts of FuxiCTR's layers."""

        def __init__(self, feature_map: Any, num_experts: int = 4, expert_units: tuple[int, ...] = (64, 32),
                     tower_units: tuple[int, ...] = (16,), **kwargs: Any) -> None:
            num_tasks = len(feature_map.labels)
            super().__init__(feature_map, model_id="MMoE", num_tasks=num_tasks,
                             task=["binary_classification"] * num_tasks, **kwargs)
            input_dim = feature_map.sum_emb_out_dim()
            self.embedding_layer = layers.FeatureEmbedding(feature_map, EMBEDDING_DIM)
            self.experts = nn.ModuleList(
                layers.MLP_Block(input_dim=input_dim, hidden_units=list(expert_units), hidden_activations="ReLU")
                for _ in range(num_experts)
            )
            self.gates = nn.ModuleList(nn.Linear(input_dim, num_experts) for _ in range(num_tasks))
            self.towers = nn.ModuleList(
                layers.MLP_Block(input_dim=expert_units[-1], output_dim=1, hidden_units=list(tower_units),
                                 hidden_activations="ReLU")
                for _ in range(num_tasks)
            )
            self.compile(kwargs["optimizer"], kwargs["loss"], 1e-3)
            self.reset_parameters()
            self.model_to_device()

        def forward(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
            """A dict of features in, one prediction per label out."""
            X = self.get_inputs(inputs)
            flat = self.embedding_layer(X).flatten(start_dim=1)
            experts = torch.stack([expert(flat) for expert in self.experts], dim=1)
            outputs = {}
            for task, label in enumerate(self.feature_map.labels):
                weights = torch.softmax(self.gates[task](flat), dim=-1).unsqueeze(-1)
                mixed = (weights * experts).sum(dim=1)
                outputs[f"{label}_pred"] = self.output_activation[task](self.towers[task](mixed))
            return outputs

    _LIBRARY_CACHE["fuxictr.MMoE"] = MMoE
    return MMoE


def _criteo_inputs(batch: int, generator: torch.Generator) -> tuple[dict[str, torch.Tensor]]:
    inputs: dict[str, torch.Tensor] = {}
    for name in NUMERIC_FEATURES:
        inputs[name] = torch.rand(batch, generator=generator)
    for name in CATEGORICAL_FEATURES:
        inputs[name] = torch.randint(0, CATEGORICAL_VOCABULARY, (batch,), generator=generator)
    return (inputs,)


# ---------------------------------------------------------------------------
# torchrec


def _embedding_bag_collection() -> nn.Module:
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    tables = [
        EmbeddingBagConfig(name=f"t_{feature}", embedding_dim=EMBEDDING_DIM, num_embeddings=SPARSE_VOCABULARY,
                           feature_names=[feature])
        for feature in SPARSE_FEATURES
    ]
    return EmbeddingBagCollection(tables=tables, device=torch.device("cpu"))


def _build_dlrm() -> nn.Module:
    from torchrec.models.dlrm import DLRM

    return DLRM(embedding_bag_collection=_embedding_bag_collection(), dense_in_features=DENSE_FEATURES,
                dense_arch_layer_sizes=[32, EMBEDDING_DIM], over_arch_layer_sizes=[32, 16, 1])


def _build_dlrm_dcn() -> nn.Module:
    from torchrec.models.dlrm import DLRM_DCN

    return DLRM_DCN(embedding_bag_collection=_embedding_bag_collection(), dense_in_features=DENSE_FEATURES,
                    dense_arch_layer_sizes=[32, EMBEDDING_DIM], over_arch_layer_sizes=[32, 16, 1],
                    dcn_num_layers=2, dcn_low_rank_dim=8)


def _build_torchrec_deepfm() -> nn.Module:
    from torchrec.models.deepfm import SimpleDeepFMNN

    return SimpleDeepFMNN(num_dense_features=DENSE_FEATURES, embedding_bag_collection=_embedding_bag_collection(),
                          hidden_layer_size=32, deep_fm_dimension=16)


def _torchrec_inputs(batch: int, generator: torch.Generator) -> tuple[torch.Tensor, Any]:
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    dense = torch.rand(batch, DENSE_FEATURES, generator=generator)
    # KJT order: feature-major, each feature's `batch` bag lengths in turn
    lengths = torch.randint(0, MAX_BAG + 1, (len(SPARSE_FEATURES) * batch,), generator=generator)
    values = torch.randint(0, SPARSE_VOCABULARY, (int(lengths.sum()),), generator=generator)
    sparse = KeyedJaggedTensor.from_lengths_sync(keys=list(SPARSE_FEATURES), values=values, lengths=lengths)
    return dense, sparse


# ---------------------------------------------------------------------------
# torchfm


def _build_ffm() -> nn.Module:
    from torchfm.model.ffm import FieldAwareFactorizationMachineModel

    return FieldAwareFactorizationMachineModel(list(TORCHFM_FIELDS), embed_dim=4)


def _build_torchfm_deepfm() -> nn.Module:
    from torchfm.model.dfm import DeepFactorizationMachineModel

    return DeepFactorizationMachineModel(list(TORCHFM_FIELDS), embed_dim=EMBEDDING_DIM, mlp_dims=(32, 16),
                                         dropout=0.2)


def _torchfm_inputs(batch: int, generator: torch.Generator) -> tuple[torch.Tensor]:
    columns = [torch.randint(0, size, (batch, 1), generator=generator) for size in TORCHFM_FIELDS]
    return (torch.cat(columns, dim=1),)


# ---------------------------------------------------------------------------
# The zoo


@dataclass(frozen=True)
class ZooModel:
    """One model of the zoo: where it comes from, how to build it, what it takes."""

    name: str
    library: str
    """The package (and version) that defines the model, or whose classes it is composed of."""
    origin: str
    """Which class: the package's own, or composed here of the package's classes."""
    structure: str
    """The input structure of one call, `model(*inputs)`."""
    module: str
    """The package to import (what `missing()` checks)."""
    builder: Callable[[], nn.Module]
    input_maker: Callable[[int, torch.Generator], tuple[Any, ...]]
    min_batch: int = 1
    """The smallest batch the model runs on in train mode (batch norm needs 2)."""

    def missing(self) -> str | None:
        """Why the model cannot be built here (its package is not
        installed: `make .venv/.zoo`), or None."""
        if importlib.util.find_spec(self.module) is None:
            return f"{self.module} is not installed (make .venv/.zoo installs benchmarks/zoo_requirements.txt)"
        return None


def _fuxictr_model(class_factory: Callable[[], type], labels: tuple[str, ...]) -> Callable[[], nn.Module]:
    def builder() -> nn.Module:
        return class_factory()(criteo_feature_map(labels), **_FUXICTR_TRAINING)

    return builder


def _long_ctr(class_name: str, **options: Any) -> Callable[[], nn.Module]:
    def builder() -> nn.Module:
        return _build_long_ctr(class_name, **options)

    return builder


_FUXI_WHEEL = f"fuxictr {FUXICTR_VERSION}"
_LONG_CTR_INPUT = "((batch_dict, item_dict, mask),): dicts of 8 and 2 tensors, mask B x 8"
_CRITEO_INPUT = "(dict,): 13 float + 26 int64 tensors of B"
_TORCHREC_INPUT = "(dense B x 13, KeyedJaggedTensor of 8 keys, bags 0-3 long)"
_TORCHFM_INPUT = f"(LongTensor B x {len(TORCHFM_FIELDS)},)"

ZOO: dict[str, ZooModel] = {
    model.name: model
    for model in (
        ZooModel("fuxictr.DCNv2", _FUXI_WHEEL, "model_zoo.LongCTR.DCNv2 (in the wheel)", _LONG_CTR_INPUT,
                 "fuxictr", _long_ctr("DCNv2", parallel_dnn_hidden_units=[64, 32], num_cross_layers=2),
                 _long_ctr_inputs),
        ZooModel("fuxictr.FinalMLP", _FUXI_WHEEL, "model_zoo.LongCTR.FinalMLP (in the wheel)", _LONG_CTR_INPUT,
                 "fuxictr", _long_ctr("FinalMLP", mlp1_hidden_units=[64, 64, 64], mlp2_hidden_units=[64, 64, 64],
                                      num_heads=2), _long_ctr_inputs),
        ZooModel("fuxictr.DIN", _FUXI_WHEEL, "model_zoo.LongCTR.DIN (in the wheel)", _LONG_CTR_INPUT,
                 "fuxictr", _long_ctr("DIN", dnn_hidden_units=[64, 32], attention_hidden_units=[32]),
                 _long_ctr_inputs, min_batch=2),
        ZooModel("fuxictr.DeepFM", _FUXI_WHEEL, "composed here: BaseModel + FuxiCTR layers", _CRITEO_INPUT,
                 "fuxictr", _fuxictr_model(_fuxictr_deepfm_class, ("click",)), _criteo_inputs),
        ZooModel("fuxictr.MMoE", _FUXI_WHEEL, "composed here: MultiTaskModel + FuxiCTR layers",
                 _CRITEO_INPUT + " -> dict of 2", "fuxictr",
                 _fuxictr_model(_fuxictr_mmoe_class, ("click", "like")), _criteo_inputs),
        ZooModel("torchrec.DLRM", f"torchrec {TORCHREC_VERSION}", "torchrec.models.dlrm.DLRM", _TORCHREC_INPUT,
                 "torchrec", _build_dlrm, _torchrec_inputs),
        ZooModel("torchrec.DLRM_DCN", f"torchrec {TORCHREC_VERSION}", "torchrec.models.dlrm.DLRM_DCN",
                 _TORCHREC_INPUT, "torchrec", _build_dlrm_dcn, _torchrec_inputs),
        ZooModel("torchrec.DeepFM", f"torchrec {TORCHREC_VERSION}", "torchrec.models.deepfm.SimpleDeepFMNN",
                 _TORCHREC_INPUT, "torchrec", _build_torchrec_deepfm, _torchrec_inputs),
        ZooModel("torchfm.FFM", f"torchfm {TORCHFM_VERSION}",
                 "torchfm.model.ffm.FieldAwareFactorizationMachineModel", _TORCHFM_INPUT, "torchfm", _build_ffm,
                 _torchfm_inputs),
        ZooModel("torchfm.DeepFM", f"torchfm {TORCHFM_VERSION}", "torchfm.model.dfm.DeepFactorizationMachineModel",
                 _TORCHFM_INPUT, "torchfm", _build_torchfm_deepfm, _torchfm_inputs, min_batch=2),
    )
}
"""Every zoo model, by name."""

INIT_STD = 0.3
"""Std of the seeded normal re-initialisation of every parameter: FuxiCTR
initialises embeddings with std 1e-4 and torchrec its tables uniformly in
a tiny range, which makes every output nearly constant; a wrong value has
to show."""


def build(name: str, train: bool = False, seed: int = 0) -> nn.Module:
    """The zoo model `name`: built as its library builds it, every parameter
    then re-initialised from a normal distribution seeded by `seed`
    (`INIT_STD`), in train or eval mode."""
    model_info = ZOO[name]
    torch.manual_seed(seed)
    model = model_info.builder()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype) * INIT_STD)
    return model.train(train)


def make_inputs(name: str, batch: int, seed: int = 0) -> tuple[Any, ...]:
    """A fresh input batch of `batch` rows for the zoo model `name`, in the
    model's own input structure (call `model(*inputs)`); other seeds give
    other values (and, for torchrec, other bag lengths)."""
    return ZOO[name].input_maker(batch, torch.Generator().manual_seed(seed))


def check() -> list[str]:
    """Build every zoo model (eval and train mode) and call it on a batch
    of 4: what `make .venv/.zoo` runs after installing. The failures, as
    `name: error` lines (empty: every model works here)."""
    failures = []
    for name, zoo_model in ZOO.items():
        missing = zoo_model.missing()
        if missing is not None:
            failures.append(f"{name}: {missing}")
            continue
        try:
            for train in (False, True):
                with torch.no_grad():
                    build(name, train=train)(*make_inputs(name, 4))
        except Exception as error:  # noqa: BLE001 - reported, the caller exits 1
            failures.append(f"{name}: {type(error).__name__}: {error}")
    return failures


if __name__ == "__main__":
    # A module of models, not a benchmark: run as a script it lists them
    # (every script of benchmarks/ answers --help), or checks them.
    import argparse
    import warnings

    parser = argparse.ArgumentParser(
        description="The model zoo's builders (a module imported by benchmarks/bench_zoo.py and "
        "tests/test_model_zoo.py); run alone it lists the models and whether each can be built here."
    )
    parser.add_argument("--check", action="store_true",
                        help="build and call every model; exit 1 naming those that fail (make .venv/.zoo)")
    arguments = parser.parse_args()
    if arguments.check:
        warnings.filterwarnings("ignore")
        problems = check()
        print("\n".join(problems) or f"model zoo: all {len(ZOO)} models build and run")
        sys.exit(1 if problems else 0)
    for zoo_model in ZOO.values():
        print(f"{zoo_model.name:20} {zoo_model.library:16} {zoo_model.missing() or 'installed'}")
