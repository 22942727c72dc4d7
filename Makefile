# The two entry points a newcomer needs: `make demo` and `make test`.
# Each creates .venv when missing, installs torch==2.13.0 first (the CPU build
# that lies on local disk), then the project editable with its test extras.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
THIRDPARTY_STAMP := $(VENV)/.thirdparty
ZOO_STAMP := $(VENV)/.zoo
ZOO_REQUIREMENTS := benchmarks/zoo_requirements.txt

.PHONY: demo test test-all bench-third-party bench-zoo check-layers docs-layers pytest lit fuzz bench bench-quick bench-roundtrip bench-export bench-batch-fusion bench-triton bench-gpu gpu-carry bench-compile clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

# The `thirdparty` extra (deepctr-torch 0.3.0 with tqdm, scikit-learn and
# requests), after the rest: torch is installed already and stays as it is.
$(THIRDPARTY_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[test,thirdparty]'
	touch $(THIRDPARTY_STAMP)

# The model zoo's libraries (FuxiCTR, torchrec with fbgemm-gpu-cpu, torchfm),
# each pinned and installed with --no-deps (benchmarks/zoo_requirements.txt
# says why), after the thirdparty extra, whose tqdm and scikit-learn they
# import. Then every zoo model is built and called once: an incomplete
# install fails here, not in the tests.
$(ZOO_STAMP): $(THIRDPARTY_STAMP) $(ZOO_REQUIREMENTS)
	$(PY) -m pip install -q --no-deps -r $(ZOO_REQUIREMENTS)
	$(PY) benchmarks/zoo_models.py --check
	touch $(ZOO_STAMP)

# ~50 s on 2 cores (README, "How long each command takes"): the 64-tower
# model optimized, checked and timed (eager and under torch.compile); the IR
# of each stage goes to build/demo. Options pass through
# DEMO_ARGS, e.g. `make demo DEMO_ARGS="--quick --no-compile"`.
demo: $(STAMP)
	$(PY) -m optimus_ir.examples.demo $(DEMO_ARGS)

# The tests on two workers (pytest-xdist; each test file stays on one worker,
# so a module's expensive fixture runs once), all but those marked `slow`
# (the benchmark scripts' smoke runs, Inductor compiles, third-party and
# corpus models, the long fuzz profiles: see `slow` in pyproject.toml), then
# the lit/FileCheck tests. `make test-all` (and CI) runs everything.
PYTEST := $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile
test: $(STAMP) $(THIRDPARTY_STAMP) $(ZOO_STAMP) check-layers
	$(PYTEST) -m "not slow" tests
	$(VENV)/bin/lit -sv tests/lit

# Every test, the slow ones included, as CI runs them (.ci/run).
test-all: $(STAMP) $(THIRDPARTY_STAMP) $(ZOO_STAMP) check-layers
	$(PYTEST) tests
	$(VENV)/bin/lit -sv tests/lit

# The layer contract (docs/architecture.md, "Layers"): layers import downward
# only (module-level, lazy and string imports), no import cycle; prints each
# violation as file:line and fails. Seconds; imports nothing of the project.
check-layers: $(STAMP)
	$(PY) tools/check_layers.py

# The layer table of docs/architecture.md, rewritten from tools/check_layers.py's
# LAYERS (between its layer-table markers); tests/test_docs_structure.py fails
# while the two differ.
docs-layers: $(STAMP)
	$(PY) tools/check_layers.py --write-layer-table docs/architecture.md

# The generated-graph fuzzer at length: FUZZ_EXAMPLES random graphs (not the
# CI profile's fixed 60), three in four fusion-rich, through optimize() with
# the default pipeline, FUSE_ALL (validated) and, for one fused graph in
# FUZZ_TRITON_EVERY (5), the Triton kernels under TRITON_INTERPRET=1; with
# progress lines, hypothesis statistics and a summary (graphs run, share in
# which batch fusion fused a group, Triton runs, failures). FUZZ_KEEP_GOING=1
# counts failures by kind instead of stopping (build/fuzz-failures.txt);
# FUZZ_KNOWN_BUGS=1 turns on the generator features of known, unfixed bugs.
# `make fuzz FUZZ_EXAMPLES=200` for a shorter run (~3.5 minutes on 2 cores).
FUZZ_EXAMPLES ?= 2000
fuzz: $(STAMP)
	FUZZ_PROFILE=fuzz FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -s -p no:cacheprovider \
		--hypothesis-show-statistics tests/test_fuzz_pipeline.py

# The benchmark suite (issue 12): every model (recsys 8..1024 towers, DLRM,
# multi-task ranking, wide & deep) under every variant (original, captured,
# ours, PyTorch's Optimus, Inductor alone / with PyTorch's Optimus / after
# ours), interleaved; ops, first-call time in fresh processes, pass time,
# steady state, peak memory, max abs diff; the pipeline's scaling to 100k
# nodes. Table, JSON and plot in build/bench/ (about an hour on 2 cores).
bench: $(STAMP)
	$(PY) benchmarks/suite.py

# A smoke run: one small model per family (suite_models.SMALL), few short
# repeats, steady state only (no first-call processes), the eager variants
# and Inductor after ours on one model (one compile), scaling at 1k and 3k
# nodes: checks that the runner works and that every variant matches the
# original, not speed. `suite.py --quick` alone adds the first-call processes
# (compile time, ops, memory) and every Inductor variant (several minutes).
bench-quick: $(STAMP)
	$(PY) benchmarks/suite.py --quick --steady-only --variants original,captured,ours,pytorch,inductor+ours \
		--scaling-nodes 1000,3000

# Import/raise/lower/export alone on generated graphs of 1k..100k nodes.
bench-roundtrip: $(STAMP)
	$(PY) benchmarks/bench_roundtrip.py --sizes 1000,10000,100000

# Per-call time of the module optimize() returns against the original model and
# the graph Dynamo captured (one thread, batch 64 and 512; a few minutes).
bench-export: $(STAMP)
	$(PY) benchmarks/bench_exported_module.py

# Ops and per-call time of ours vs PyTorch's pre-grad Optimus on the recsys
# variants (8/64/256 towers, uniform and mixed, batch 64 and 512; ~10 minutes).
bench-batch-fusion: $(STAMP)
	$(PY) benchmarks/bench_batch_fusion.py

# The Triton kernels on a GPU (issue 10): each kernel against the torch
# lowering and looped torch ops, the 256-tower recsys model end to end (eager,
# ours, Inductor, Inductor + PyTorch's Optimus, Inductor after ours), CUDA
# graphs (each fused op captured and replayed vs eager launches; recsys under
# mode="reduce-overhead") and the targets as PASS/FAIL (~5 minutes on an
# H200). Without CUDA it says so, runs its smoke with the kernels in Triton's
# interpreter and exits 0.
bench-triton: $(STAMP)
	$(PY) benchmarks/bench_triton_kernels.py

# Issue 38 on the GPU: the suite's models (recsys uniform/mixed 64 and 256,
# mmoe, dlrm, wide-deep) and torchfm's DeepFM and FFM at fp32 and bf16, batch
# 512 and 4096: the eager module, the captured graph, ours launched eagerly,
# ours under CUDA graphs, Inductor default and reduce-overhead, Inductor with
# PyTorch's Optimus; a launch profile of our fused ops (host time, copies,
# syncs, allocations per call); the targets as PASS/FAIL. The issue's target
# row runs first and a 480 s budget stops starting rows (one device call is at
# most 10 minutes); JSON in build/bench/gpu.json after every row. Without CUDA
# it says so and exits 0 (`--smoke` runs it on the CPU).
bench-gpu: $(STAMP)
	$(PY) benchmarks/bench_gpu.py --profile

# What the device machine lacks, ready to carry (`tools/gpu_check.sh` says how
# the check runs there): pure-Python wheels for its Python 3.12 (xdsl and its
# dependencies) in .whl/, and torchfm (an sdist) copied from
# the venv into .gpu-site/. Both folders are git-ignored.
gpu-carry: $(ZOO_STAMP)
	rm -rf .whl .gpu-site && mkdir -p .whl .gpu-site
	$(PY) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		--platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl \
		xdsl==0.75.0 immutabledict==4.3.1 ordered-set==4.1.0
	cp -r $$($(PY) -c 'import torchfm, os; print(os.path.dirname(torchfm.__file__))') .gpu-site/

# torch.compile with and without us (issue 11) on the 64-tower mixed recsys
# model: Inductor alone, Inductor + PyTorch's Optimus, Inductor after ours;
# first-call compile time in fresh processes with fresh Inductor cache dirs,
# steady-state time interleaved; the targets as PASS/FAIL (~15 minutes).
bench-compile: $(STAMP)
	$(PY) benchmarks/bench_compile.py

# deepctr-torch's MMOE, PLE, DCN, DeepFM and xDeepFM (re-initialised), batch
# 64 and 512: ops, groups fused and per-call time of the captured graph, ours
# (freeze=True) and PyTorch's pre-grad Optimus; table and JSON in build/bench/
# (a few minutes on one core).
bench-third-party: $(THIRDPARTY_STAMP)
	$(PY) benchmarks/bench_third_party.py --json build/bench/third_party.json \
		--markdown build/bench/third_party.md

# The model zoo (issue 34): FuxiCTR, torchrec and torchfm models through
# optimize() (and freeze=True) at three batch sizes with fresh inputs: whether
# every call equals the model, groups fused, re-optimizations, per-call time
# of the model and ours; table and JSON in build/bench/ (a few minutes).
bench-zoo: $(ZOO_STAMP)
	$(PY) benchmarks/bench_zoo.py --json build/bench/zoo.json --markdown build/bench/zoo.md

clean:
	rm -rf $(VENV) build *.egg-info
