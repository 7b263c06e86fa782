# One entry point for users, developers and CI. Everything installs from this repository alone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test test-quick test-floors demo lint typecheck format vendor-shared bench bench-deps bench-docs soak-serve clean \
	gym-venv gym-check test-py313

# Everything the suite, the linters and the type check need: the package with its dev extra (which holds the
# serve, report and ray extras).
install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Pytest exit code 5 ("no tests collected") is a failure here, as any non-zero code is. bench-deps: the serve
# tests check the NeMo Gym component and rewards with NeMo Gym 0.7.0's own code (its wheel, bench-only).
test: install bench-deps
	$(BIN)/python -m pytest -q

# The suite without the tests marked slow (tests/slow_tests.txt: servers, Ray, the browser, subprocess-per-case
# suites, long property runs): the run to repeat while working. `make test` (and CI) runs them all.
test-quick: install bench-deps
	$(BIN)/python -m pytest -q -m "not slow"

# The suite again, in a separate venv where every direct dependency is at the floor pyproject.toml declares
# (scripts/floors.py turns each `>=` into a pip constraint `==`; wheels only), so every floor is a version the
# tests pass on. The venv is rebuilt when pyproject.toml changes.
FLOORS_VENV ?= .venv-floors

test-floors: $(FLOORS_VENV)/.installed
	$(FLOORS_VENV)/bin/python scripts/floors.py --check
	$(FLOORS_VENV)/bin/python -m pytest -q

$(FLOORS_VENV)/.installed: pyproject.toml scripts/floors.py
	rm -rf $(FLOORS_VENV)
	$(PYTHON) -m venv $(FLOORS_VENV)
	$(FLOORS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(FLOORS_VENV)/bin/python scripts/floors.py > $(FLOORS_VENV)/floors.txt
	$(FLOORS_VENV)/bin/python -m pip install --quiet --only-binary :all: -c $(FLOORS_VENV)/floors.txt -e '.[dev,bench]'
	touch $@

# NeMo Gym 0.7.0 as its users install it, in a venv of its own: the newest Python 3.13 here (PY313: pyenv's
# newest 3.13, else python3.13 on PATH), NeMo Gym 0.7.0 with all its dependencies from PyPI (its wheel from
# bench/.cache when present) and this package with its dev extra. --ignore-requires-python: NeMo Gym asks for
# 3.13.14 and pyenv here has 3.13.0 (only the patch level is short). Rebuilt when pyproject.toml changes; the pip
# cache makes a rebuild a few minutes, the first build ~10 (about 1.5 GB: Ray, MLflow, W&B, pandas, scipy ...).
PY313 ?= $(or $(shell ls -d $(HOME)/.pyenv/versions/3.13.* 2>/dev/null | sort -V | tail -1 | sed 's|$$|/bin/python|'),$(shell command -v python3.13 2>/dev/null))
GYM_VENV ?= .venv-gym
NEMO_GYM_SPEC = $(if $(wildcard $(NEMO_GYM_WHEEL)),$(NEMO_GYM_WHEEL),nemo-gym==0.7.0)

gym-venv: $(GYM_VENV)/.installed

$(GYM_VENV)/.installed: pyproject.toml
	@"$(PY313)" -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null || \
		{ echo "no Python 3.13 here (PY313=$(PY313)): set PY313=/path/to/python3.13" >&2; exit 1; }
	rm -rf $(GYM_VENV)
	$(PY313) -m venv $(GYM_VENV)
	$(GYM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(GYM_VENV)/bin/python -m pip install --quiet --ignore-requires-python '$(NEMO_GYM_SPEC)'
	$(GYM_VENV)/bin/python -m pip install --quiet -e '.[dev]'
	$(GYM_VENV)/bin/python -m pip check
	touch $@

# NeMo Gym's launcher (tests/test_gym_launcher.py): `gym env start` runs the component, `ng_collect_rollouts`
# collects rollouts through it against a replay policy server, next to the stock mcqa server; rewards, masks and
# aggregate metrics compared. ~5 min on 2 cores. Its summary goes to bench/results/gym_check.json (committed).
gym-check: install gym-venv
	MCQA_PREP_GYM_VENV=$(GYM_VENV) MCQA_PREP_GYM_RESULT=bench/results/gym_check.json \
		$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_gym_launcher.py

# The grader, prepare, serve and component tests again on Python 3.13 (the interpreter NeMo Gym, and so the
# component, runs on), in the NeMo Gym venv, NeMo Gym's own code read from its installation there.
PY313_TESTS := tests/test_grader_modes.py tests/test_grader_properties.py tests/test_grader_version.py \
	tests/test_conformance_parity.py tests/test_boxed_reference.py tests/test_mode_table.py tests/test_nfkc.py \
	tests/test_regex_bound.py tests/test_robust.py tests/test_robust_corpus.py tests/test_robust_linear.py \
	tests/test_prepare.py tests/test_prepare_runtime.py tests/test_prepare_version.py tests/test_verify.py \
	tests/test_contract.py tests/test_serve.py tests/test_serve_wire.py tests/test_serve_parity.py \
	tests/test_serve_gym.py tests/hostile/test_hostile_http.py

test-py313: gym-venv
	MCQA_PREP_NEMO_GYM_SITE=$$($(GYM_VENV)/bin/python -c 'import nemo_gym, pathlib; print(pathlib.Path(nemo_gym.__file__).parents[1])') \
		$(GYM_VENV)/bin/python -m pytest -q -p no:cacheprovider $(PY313_TESTS)


# The demo installs only what it runs: the core (its last step writes the HTML page, which needs no extra). A
# .venv made by `make install` already holds it.
DEMO_STAMP := $(VENV)/.installed-demo

$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e .
	touch $@

demo: $(if $(wildcard $(STAMP)),$(STAMP),$(DEMO_STAMP))
	bash scripts/demo.sh $(BIN)

lint: install
	$(BIN)/ruff check mcqa_prep tests bench
	$(BIN)/ruff format --check mcqa_prep tests bench

# mypy on the package, configured in pyproject.toml ([tool.mypy]: strict on grader/, io/, policy, records,
# errors; a checked baseline elsewhere)
typecheck: install
	$(BIN)/mypy

# Refresh the repository's copy of the conformance suites and NeMo Gym's example data from shared/
# ($MCQA_PREP_SHARED, else ../shared); tests/test_vendored_data.py fails until the copy equals shared/.
SHARED ?= $(or $(MCQA_PREP_SHARED),../shared)

vendor-shared:
	test -d $(SHARED)/conformance && test -d $(SHARED)/fixtures/nemo_gym_0.7.0
	find tests/conformance -maxdepth 1 -type f -delete
	find tests/fixtures/nemo_gym_0.7.0 -maxdepth 1 -type f ! -name README.md -delete
	find $(SHARED)/conformance -maxdepth 1 -type f -exec install -m 644 {} tests/conformance/ \;
	find $(SHARED)/fixtures/nemo_gym_0.7.0 -maxdepth 1 -type f -exec install -m 644 {} tests/fixtures/nemo_gym_0.7.0/ \;

format: install
	$(BIN)/ruff format mcqa_prep tests bench
	$(BIN)/ruff check --fix mcqa_prep tests bench

# The bench measures every figure next to NeMo Gym 0.7.0's own grading code, installed for the bench only:
# its wheel with --no-deps (it pins a server stack the grading never uses) plus the openai and pydantic its
# request model needs and the FastAPI its app is served with (bench_serve's baseline), into bench/.cache/site
# (git-ignored), never into the package's dependencies. The stamp's suffix changes when the set does (an older
# site is completed).
NEMO_GYM_WHEEL := bench/.cache/nemo_gym-0.7.0-py3-none-any.whl
NEMO_GYM_SITE  := bench/.cache/site

bench-deps: $(NEMO_GYM_SITE)/.installed-v2 $(VENV)/.bench-extra

# the audit row's baseline (datasketch) goes into the venv: it is a package extra, not a foreign wheel
$(VENV)/.bench-extra: pyproject.toml | install
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $@

$(NEMO_GYM_SITE)/.installed-v2: | install
	mkdir -p bench/.cache
	test -f $(NEMO_GYM_WHEEL) || $(BIN)/python -m pip download --quiet --no-deps 'nemo-gym==0.7.0' \
		--python-version 3.13.14 --only-binary=:all: -d bench/.cache
	$(BIN)/python -m pip install --quiet --target $(NEMO_GYM_SITE) 'openai==2.44.0' 'pydantic==2.14.4' \
		'fastapi==0.165.0'
	$(BIN)/python -m pip install --quiet --no-deps --ignore-requires-python --upgrade \
		--target $(NEMO_GYM_SITE) $(NEMO_GYM_WHEEL)
	touch $@

# `make bench`: every bench module (bench/bench_*.py), each in its own process; raw results to bench/results/,
# then `make bench-docs` writes them into README.md and docs/ (tests/test_bench_docs.py checks they agree).
# FULL=1: also the 685,573-row figures. BASELINE=REV: rescore on REV's package too. BENCH_ARGS: e.g.
# `--scale 0.05 --only rescore --out /tmp/r` for a quick check that leaves bench/results alone.
bench: install bench-deps gym-venv
	$(BIN)/python bench/run.py $(if $(FULL),--full) $(if $(BASELINE),--baseline-rev $(BASELINE)) $(BENCH_ARGS)

bench-docs: install
	$(BIN)/python bench/render.py

# `mcqa-prep serve` soak (>= 100k requests, 5% hostile, memory growth) and 20k-row parity with NeMo Gym's verify;
# its figures to bench/results/soak.json
soak-serve: install bench-deps
	$(BIN)/python bench/run.py --only soak $(SOAK_ARGS)

clean:
	rm -rf $(VENV) $(FLOORS_VENV) $(GYM_VENV) build *.egg-info .pytest_cache bench/.cache
