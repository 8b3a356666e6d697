# make demo   - set up .venv, generate a demo ImageFolder, convert it, print the verify summary
# make test   - set up .venv, run the test suite (tests/cluster starts a real single-node SLURM when
#               run as root with apt; it says why it skips otherwise; tests/workflow/test_floors.py
#               runs the reader's tests again in a venv of requirements-floors.txt)
# make test-cluster - the SLURM tests alone
# make bench  - the benchmarks (minutes); writes BENCHMARKS.md
# make lint   - ruff + mypy (src, scripts) + snakefmt + snakemake --lint + lint-imports (the layers, pyproject.toml)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 2

.PHONY: demo test test-cluster bench lint format clean

# the checkout installed editable, as a user's `pip install` would: the rules import the package
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

# Azurite, the Azure Blob emulator of the az:// tests (tests/support/emulators.py), from npm into the
# venv. Best effort: without npm or its registry those tests skip and say why, and the next `make test`
# tries again (the stamp is written only once it installed).
AZURITE_VERSION := 3.35.0
AZURITE := $(VENV)/azurite/.installed
$(AZURITE): | $(STAMP)
	@if ! command -v npm > /dev/null; then \
	  echo "make: no npm, Azurite not installed: the az:// tests skip"; \
	elif timeout 300 npm install --prefix $(VENV)/azurite --no-audit --no-fund --fetch-retries=1 \
	    --fetch-timeout=30000 azurite@$(AZURITE_VERSION) > $(VENV)/azurite.log 2>&1; then \
	  touch $@; \
	else \
	  echo "make: npm could not install Azurite ($(VENV)/azurite.log): the az:// tests skip"; \
	fi

# The Hugging Face reference of tests/unit/test_label_files_hf.py (requirements-hf.txt), in a venv of
# its own: the pandas that datasets brings would make Snakemake import it at every start in .venv.
# Best effort: without the registry those tests skip and say why; the next `make test` tries again.
HF_REFERENCE := $(VENV)/hf/.installed
$(HF_REFERENCE): requirements-hf.txt | $(STAMP)
	@$(PYTHON) -m venv $(VENV)/hf && \
	if $(VENV)/hf/bin/pip install --quiet -r requirements-hf.txt > $(VENV)/hf.log 2>&1; then \
	  touch $@; \
	else \
	  echo "make: pip could not install requirements-hf.txt ($(VENV)/hf.log): the Hugging Face comparisons skip"; \
	fi

data/demo/train:
	$(BIN)/python -m benchmarks.make_images data/demo/train.incomplete --images 240 --classes 6 --seed 1
	mv data/demo/train.incomplete data/demo/train

data/demo/val:
	$(BIN)/python -m benchmarks.make_images data/demo/val.incomplete --images 60 --classes 6 --seed 1 --first-index 100000
	mv data/demo/val.incomplete data/demo/val

demo: $(STAMP) data/demo/train data/demo/val
	$(BIN)/snakemake --cores $(CORES) --configfile config/demo.yaml --logger imagefolder-lmdb

# Three worker processes (pytest-xdist) on two cores: the SLURM tests, handed out first, keep one
# mostly waiting on the scheduler (tests/support/scheduling.py). Budget: README.md, "Tests".
TEST_WORKERS ?= 3
# Bytecode written once: each of the suite's ~2,000 rule jobs imports the package afresh, and where
# PYTHONDONTWRITEBYTECODE is set (CI containers) it would compile it again every time.
test: $(STAMP) $(AZURITE) $(HF_REFERENCE)
	$(BIN)/python -m compileall -q src scripts tests benchmarks > /dev/null
	$(BIN)/python -m pytest tests -n $(TEST_WORKERS) --dist loadgroup

test-cluster: $(STAMP)
	$(BIN)/python -m compileall -q src scripts tests > /dev/null
	$(BIN)/python -m pytest tests/cluster

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

lint: $(STAMP)
	$(BIN)/ruff check scripts src tests benchmarks
	$(BIN)/ruff format --check scripts src tests benchmarks
	$(BIN)/mypy
	$(BIN)/snakefmt --check Snakefile rules
	$(BIN)/snakemake --lint --configfile config/demo.yaml
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff format scripts src tests benchmarks
	$(BIN)/snakefmt Snakefile rules

clean:
	rm -rf results/demo work/demo data/demo .snakemake
