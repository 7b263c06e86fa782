# One entry point for users, developers and CI. Everything installs from this repository alone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test demo lint format bench clean

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

bench: install
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
