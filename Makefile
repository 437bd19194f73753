# pelab — see README.md. `make run` and `make test` install what is missing
# (Debian packages, via scripts/install-deps.sh), build and run.
CC ?= gcc
# The instruction set the build targets: a fixed level of x86-64, the highest
# the CPU running the build has (v4: AVX-512; v3: AVX2 and FMA), always tuned
# as for znver3. Not -march=native: gcc's code for a loop (whether it is
# vectorised, how wide, and with it the order of every sum a vector loop
# makes) follows -march and -mtune, so -march=native builds on the Intel Xeon
# and on the AMD EPYC computed other last bits in every encoding
# (scripts/same-bits.sh: 0 of 42 identical). With a fixed target two CPUs of
# one level compile the same code. znver3 is what gcc 12's -march=native
# stands for on the EPYC, which made results/: this build gives those bits
# (same-bits 42 of 42 against the EPYC's -march=native build; with the
# default tuning, 31 of 42). Elsewhere (no AVX2, another architecture):
# -march=native. `make ARCH=native` (or CFLAGS) chooses otherwise; an ARCH in
# the environment does not (some set it to name a platform: x86_64, amd64).
# The lab keys its runs on what the flags stand for (docs/workflow.md).
NATIVE_MACROS := $(shell $(CC) -march=native -dM -E - </dev/null 2>/dev/null)
X86_64_V3 = __AVX2__ __FMA__ __BMI__ __BMI2__ __F16C__ __LZCNT__ __MOVBE__
X86_64_V4 = $(X86_64_V3) __AVX512F__ __AVX512BW__ __AVX512CD__ __AVX512DQ__ __AVX512VL__
has_all = $(if $(strip $(filter-out $(NATIVE_MACROS),$(1))),,yes)
ARCH = $(if $(call has_all,$(X86_64_V4)),x86-64-v4,$(if $(call has_all,$(X86_64_V3)),x86-64-v3,native))
ARCH_FLAGS = -march=$(ARCH)$(if $(filter x86-64-v%,$(ARCH)), -mtune=znver3)
CFLAGS ?= -O2 $(ARCH_FLAGS) -g
# -fno-math-errno: nothing reads errno after a maths call, and with it GCC
# keeps any loop that takes a square root scalar (the AdamW update); the
# results are the same (sqrt is correctly rounded either way).
# -fno-trapping-math: nothing enables floating-point traps, and without it GCC
# may not compute both sides of a choice in a loop (one side "could trap"), so
# on x86-64-v3 (no AVX-512 masks) it left GELU, the softmax and every
# ops_expf loop (whose clamps it splits into branches) scalar: 18% of a step's
# samples on a Zen 2 EPYC. Each operation, and each multiply-add GCC fuses,
# is unchanged; on v4 the same loops vectorise, as wide, with the same fused
# multiply-adds in every function, so its results keep their bits. A v3
# build computes other last bits than before (scripts/same-bits.sh 0 of 42):
# the softmax's sum, an `omp simd` reduction, now runs 8 lanes wide.
CFLAGS += -fno-math-errno -fno-trapping-math -fopenmp-simd -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-unknown-pragmas
LDLIBS = -lm

PKGS = openblas stb zlib
# Read when a recipe runs, not when make starts: `make deps-lab train` on a
# fresh machine installs the packages and then builds with their flags.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS += $(PKG_CFLAGS)
LDLIBS += $(PKG_LIBS)
# oneDNN (Debian's libdnnl-dev, no pkg-config file): a second matrix engine
# (--gemm onednn; model/gemm.h) when its header is there; ONEDNN=0 builds
# without it even then. Not in the builds without OpenMP (oneDNN threads
# itself through OpenMP, which such a build cannot hold to one thread) or
# with the sanitizers (they would check oneDNN's code, not pelab's).
ifeq ($(NO_OMP),1)
ONEDNN = 0
endif
ifeq ($(SAN),1)
ONEDNN = 0
endif
ifneq ($(ONEDNN),0)
ONEDNN_FLAGS = $(shell test -e /usr/include/oneapi/dnnl/dnnl.h && echo -DPELAB_ONEDNN)
ONEDNN_LIBS = $(if $(ONEDNN_FLAGS),-ldnnl)
CFLAGS += $(ONEDNN_FLAGS)
LDLIBS += $(ONEDNN_LIBS)
endif

ifneq ($(NO_OMP),1)
CFLAGS += -fopenmp
LDFLAGS += -fopenmp
endif
# MPI=1: ./train itself is built with MPI (mpirun -np R ./train …). Without
# it, `make train-mpi` builds the MPI binary beside the plain one.
MPICC ?= mpicc
HAVE_MPI := $(shell command -v $(MPICC) >/dev/null 2>&1 && echo yes)
ifeq ($(MPI),1)
CC = $(MPICC)
CFLAGS += -DPELAB_MPI
endif
# WERROR=1: a warning fails the build (CI builds so).
ifeq ($(WERROR),1)
CFLAGS += -Werror
endif
ifeq ($(SAN),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -O1
LDFLAGS += -fsanitize=address,undefined
endif

# The layers, bottom up: core/ (errors, start-up, JSON), data/, plot/ (the PNG
# canvas), model/ and its encodings in model/pe/, run/ (the settings schema,
# the run's state, checkpoints), eval/, cli/; train.c on top. A folder
# includes only folders before it in this list.
LIB_SRC = $(wildcard core/*.c data/*.c plot/*.c model/*.c model/pe/*.c eval/*.c run/*.c cli/*.c)
HEADERS = $(wildcard core/*.h data/*.h plot/*.h model/*.h model/pe/*.h run/*.h eval/*.h cli/*.h)
TEST_SRC = $(wildcard tests/*.c)

.PHONY: all run test deps-test bench fuzz experiments experiments-quick claims claims-check readme readme-check slurm-check deps deps-lab deps-torch check-deps clean
all: train

check-deps:
	@pkg-config --exists $(PKGS) 2>/dev/null || { \
	  echo "missing build dependencies: pkg-config could not find '$(PKGS)'."; \
	  echo "install them with:  sudo apt-get install pkg-config libopenblas-dev libstb-dev zlib1g-dev"; \
	  echo "or run:             make deps"; exit 1; }

deps:
	scripts/install-deps.sh

train: $(LIB_SRC) train.c $(HEADERS) build/commit.h build/flags | check-deps
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ train.c $(LIB_SRC) $(LDLIBS)

# The commit ./train is built from (git describe; "-dirty" with uncommitted
# changes), for --json: rewritten only when it changes, so an unchanged tree
# rebuilds nothing; no git, no commit.
build/commit.h: FORCE
	@mkdir -p build; c="$$(git describe --always --dirty --abbrev=12 2>/dev/null)"; \
	line="#define PELAB_COMMIT \"$$c\""; [ "$$(cat $@ 2>/dev/null)" = "$$line" ] || echo "$$line" > $@
FORCE:

# The compiler and its flags, the same way: a change of them (SAN=1, ARCH=,
# NO_OMP=1, a new flag in this file) rebuilds the programs; `make` alone
# after `make SAN=1` does not reuse the sanitizer's build.
build/flags: FORCE
	@mkdir -p build; line='$(CC) $(CFLAGS) $(LDFLAGS) $(LDLIBS)'; \
	[ "$$(cat $@ 2>/dev/null)" = "$$line" ] || echo "$$line" > $@

train-mpi: $(LIB_SRC) train.c $(HEADERS) build/commit.h build/flags | check-deps
	@command -v $(MPICC) >/dev/null || { echo "no $(MPICC): install OpenMPI with  scripts/install-deps.sh --mpi"; exit 1; }
	$(MPICC) $(CFLAGS) -DPELAB_MPI $(LDFLAGS) -o $@ train.c $(LIB_SRC) $(LDLIBS)

# The suite is told train's sources (cli/help_lists_every_variable reads them).
tests/test_pelab: $(LIB_SRC) $(TEST_SRC) $(HEADERS) tests/test.h build/flags | check-deps
	$(CC) $(CFLAGS) -DPELAB_TRAIN_SOURCES='"$(strip train.c $(LIB_SRC) $(HEADERS))"' \
	  -DPELAB_CC='"$(CC)"' -DPELAB_CFLAGS='"$(strip $(CFLAGS))"' $(LDFLAGS) -o $@ $(TEST_SRC) $(LIB_SRC) $(LDLIBS)

bench-pelab: $(LIB_SRC) bench/bench.c $(HEADERS) build/flags | check-deps
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ bench/bench.c $(LIB_SRC) $(LDLIBS)

# The peers (PyTorch 2, JAX) come from PyPI into a cached virtual environment
# (bench/peers/venv.sh, at the pins of bench/peers/requirements.txt).
bench: deps
	scripts/install-deps.sh --peers
	$(MAKE) bench-pelab train $(if $(HAVE_MPI),train-mpi)
	@mkdir -p results
	./bench-pelab
	py=$$(bench/peers/venv.sh) && $$py bench/peers/peers.py
	bench/bench-mpi.sh
	bench/bench-attn.sh

# libFuzzer harnesses (clang; no OpenMP there: clang's needs libomp).
FUZZ_SECONDS ?= 30
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -Wno-unknown-pragmas $(shell pkg-config --cflags $(PKGS))
tests/fuzz/fuzz_ckpt: tests/fuzz/fuzz_ckpt.c $(LIB_SRC) $(HEADERS) | check-deps
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_ckpt.c $(LIB_SRC) $(LDLIBS)
tests/fuzz/fuzz_cli: tests/fuzz/fuzz_cli.c $(LIB_SRC) $(HEADERS) | check-deps
	clang $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_cli.c $(LIB_SRC) $(LDLIBS)
fuzz: tests/fuzz/fuzz_ckpt tests/fuzz/fuzz_cli
	@for h in ckpt cli; do \
	  work=$$(mktemp -d); \
	  echo "fuzzing the $$h parser for $(FUZZ_SECONDS)s (seeds: tests/fuzz/corpus_$$h)"; \
	  ./tests/fuzz/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -print_final_stats=1 \
	      -artifact_prefix=$$work/ $$work tests/fuzz/corpus_$$h 2>$$work/log || { tail -40 $$work/log; echo "fuzz_$$h found a crash: $$work"; exit 1; }; \
	  grep -E "stat::number_of_executed_units|Done" $$work/log | head -2; rm -rf $$work; \
	done

# The experiments: the Snakemake workflow lab/Snakefile, defined by
# lab/config.yaml (docs/workflow.md). RUNDIR keeps every run, so running
# again resumes; TEXT is the text corpus (default: the config's, downloaded
# and checked); JOBS runs at a time. make experiments publishes the tables
# and figures into results/ (ONLY="EXP …": those experiments' only); lab/run
# DIR writes only into DIR.
RUNDIR ?= runs/full
JOBS ?= $(shell nproc)
TEXT ?=
experiments: deps-lab
	$(MAKE) train
	@t0=$$(date +%s); rc=0; \
	lab/run $(if $(TEXT),--text $(TEXT)) $(RUNDIR) -j $(JOBS) $(if $(ONLY),$(addprefix publish_,$(ONLY)),publish) || rc=$$?; \
	echo "$$(date -u +%FT%TZ) make experiments$(if $(ONLY), ONLY=\"$(ONLY)\") JOBS=$(JOBS): $$(( $$(date +%s) - t0 )) s, exit $$rc" >> results/experiments.log; \
	[ $$rc -ne 0 ] || $(CLAIMS) --out docs/claims.md || rc=$$?; \
	exit $$rc

# The claims ledger (docs/claims.md) from the tables in results/ and the
# declarations in lab/claims.yaml; claims-check fails when it is not current.
CLAIMS = /usr/bin/python3 -c 'import sys; sys.path.insert(0, "lab"); from pelab_lab.claims import main; sys.exit(main())' lab/claims.yaml results
claims: deps-lab
	$(CLAIMS) --out docs/claims.md

claims-check:
	$(CLAIMS) --check docs/claims.md

# The results tables of the README and docs/experiments.md copied from results/ (after a marker line
# `<!-- results/EXP.md table K -->`); readme-check also fails on a number in
# its results sections that results/ and the ledger do not have.
README_TOOL = /usr/bin/python3 -c 'import sys; sys.path.insert(0, "lab"); from pelab_lab.readme import main; sys.exit(main())' README.md docs/experiments.md docs/performance.md results docs/claims.md
readme: deps-lab
	$(README_TOOL) --write

readme-check:
	$(README_TOOL)

# The workflow on a tiny budget and the lab's checks (CI runs it).
experiments-quick: deps-lab
	$(MAKE) train
	lab/check.sh

deps-lab:
	scripts/install-deps.sh --lab

# A single-node Slurm on this machine and the QUICK workflow through it
# (root; installs slurm-wlm and munge; CI runs it).
slurm-check:
	scripts/install-deps.sh --lab --slurm
	$(MAKE) train
	lab/slurm-check.sh

run: deps
	$(MAKE) train
	./train

# The suite's cross-checks need PyTorch (the independent reference) and
# OpenMPI (the multi-process runs): Debian packages, installed here so that a
# fresh machine skips nothing it could have run.
test: deps-test
	$(MAKE) train tests/test_pelab train-mpi
	./tests/test_pelab

deps-test:
	scripts/install-deps.sh --torch --mpi

clean:
	rm -f train train-mpi tests/test_pelab bench-pelab tests/fuzz/fuzz_ckpt tests/fuzz/fuzz_cli build/commit.h build/flags
