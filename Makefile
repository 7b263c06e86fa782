# One entry point for users, developers and CI. Everything installs from this repository alone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test demo lint format bench bench-deps clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Pytest exit code 5 ("no tests collected") is a failure here, as any non-zero code is.
test: install
	$(BIN)/python -m pytest -q

demo: install
	bash scripts/demo.sh $(BIN)

lint: install
	$(BIN)/ruff check mcqa_prep tests bench
	$(BIN)/ruff format --check mcqa_prep tests bench

format: install
	$(BIN)/ruff format mcqa_prep tests bench
	$(BIN)/ruff check --fix mcqa_prep tests bench

# The bench measures every figure next to NeMo Gym 0.7.0's own grading code, installed for the bench only:
# its wheel with --no-deps (it pins a server stack the grading never uses) plus the openai and pydantic its
# request model needs, into bench/.cache/site (git-ignored), never into the package's dependencies.
# `make bench FULL=1`: peak memory at full size too (685,573 rows; minutes). BASELINE=REV: before/after.
NEMO_GYM_WHEEL := bench/.cache/nemo_gym-0.7.0-py3-none-any.whl
NEMO_GYM_SITE  := bench/.cache/site

bench-deps: $(NEMO_GYM_SITE)/.installed $(VENV)/.bench-extra

# the audit row's baseline (datasketch) goes into the venv: it is a package extra, not a foreign wheel
$(VENV)/.bench-extra: pyproject.toml | install
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $@

$(NEMO_GYM_SITE)/.installed: | install
	mkdir -p bench/.cache
	test -f $(NEMO_GYM_WHEEL) || $(BIN)/python -m pip download --quiet --no-deps 'nemo-gym==0.7.0' \
		--python-version 3.13.14 --only-binary=:all: -d bench/.cache
	$(BIN)/python -m pip install --quiet --target $(NEMO_GYM_SITE) 'openai==2.44.0' 'pydantic==2.14.4'
	$(BIN)/python -m pip install --quiet --no-deps --ignore-requires-python --upgrade \
		--target $(NEMO_GYM_SITE) $(NEMO_GYM_WHEEL)
	touch $@

bench: install bench-deps
	$(BIN)/python bench/run.py $(if $(FULL),--full) $(if $(BASELINE),--baseline-rev $(BASELINE)) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache bench/.cache
