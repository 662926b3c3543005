# The two commands of the README:
#   make synth   set up and synthesize the default configuration into cdk.out/ (no AWS credentials)
#   make test    set up and run the whole test suite
# Everything is installed into this folder (.venv/, node_modules/) from the project's own files.

PYTHON ?= python3
VENV := .venv
# jsii runs the first `node` on PATH: put the pinned Node.js 22 (node_modules/.bin) and the venv first.
export PATH := $(CURDIR)/$(VENV)/bin:$(CURDIR)/node_modules/.bin:$(PATH)
# The CLI's periodic notices and telemetry are noise in CI logs.
export CDK_DISABLE_CLI_TELEMETRY := true

CDK := cdk --no-notices
# CONTEXT_FILE=<file>: a JSON object of settings (e.g. examples/existing-cluster.json), passed as -c flags.
CONTEXT_ARGS = $(if $(CONTEXT_FILE),$(shell $(PYTHON) scripts/context_flags.py $(CONTEXT_FILE)))
NODE_STAMP := node_modules/.installed
RUNTIME_STAMP := $(VENV)/.runtime-installed
DEV_STAMP := $(VENV)/.dev-installed
# checkov lives in a venv of its own: its dependencies would fight the app's pins.
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed

.PHONY: synth test setup hooks cdk docs snapshots security-report review bench rehearsal release-ids clean

synth: $(RUNTIME_STAMP) $(NODE_STAMP)
	rm -rf cdk.out  # the CLI never removes old templates; start from nothing
	$(CDK) synth --quiet $(CDK_ARGS) $(CONTEXT_ARGS)
	@echo "Synthesized: $$(cd cdk.out && ls *.template.json | tr '\n' ' ')"

test: $(DEV_STAMP) $(NODE_STAMP) $(CHECKOV_STAMP)
	python -m pytest $(PYTEST_ARGS)

setup: $(DEV_STAMP) $(NODE_STAMP)

# Git hooks: pre-commit (pinned in requirements-hooks.txt) runs ruff and mypy on every commit.
hooks: $(DEV_STAMP)
	python -m pip install -q -r requirements-hooks.txt
	pre-commit install

# Any other CDK command with the project's toolchain, e.g. make cdk ARGS="deploy --all"
cdk: $(RUNTIME_STAMP) $(NODE_STAMP)
	$(CDK) $(ARGS) $(CONTEXT_ARGS)

# Regenerate the README's configuration reference and acknowledgment table from the code.
docs: $(RUNTIME_STAMP) $(NODE_STAMP)
	python scripts/generate_docs.py

# Accept the current templates as the new snapshots (review the diff in git before committing).
snapshots: $(DEV_STAMP) $(NODE_STAMP)
	python -m pytest tests/test_snapshots.py --snapshot-update -q

# Lifecycle rehearsal: create and destroy critical paths (worst case) of the default, node-group, Pod Identity,
# production and existing-cluster configurations, from CloudFormation's semantics over the synthesized
# templates.
rehearsal: $(DEV_STAMP) $(NODE_STAMP)
	python -m pytest tests/test_rehearsal.py -q -k critical_paths

# When cutting a release: record every logical id (nested stacks included) that later versions must
# keep, so that a refactor cannot make CloudFormation replace a deployed resource unnoticed.
release-ids: $(DEV_STAMP) $(NODE_STAMP)
	python scripts/release_logical_ids.py

# Synth time of this project against aws_eks + cdk-eks-karpenter (throwaway venv), alternating.
bench: $(RUNTIME_STAMP) $(NODE_STAMP)
	python scripts/bench/bench.py $(ARGS)

# What deploying the current synth over the committed snapshots would replace, delete or interrupt;
# exits 1 on an unacknowledged replacement or deletion of a stateful resource, or a deploy that would fail.
# BASE=<git revision> reads the snapshots of that revision (CI: the pull request's base branch).
review: $(DEV_STAMP) $(NODE_STAMP)
	python scripts/review.py $(if $(BASE),--base $(BASE)) $(if $(CONTEXT_FILE),--context-file $(CONTEXT_FILE)) $(ARGS)

# cdk-nag and cfn-lint results of the current configuration as tables; exits 1 on anything open.
security-report: $(DEV_STAMP) $(NODE_STAMP) $(CHECKOV_STAMP)
	python scripts/security_report.py $(ARGS)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(CHECKOV_STAMP): requirements-checkov.txt
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install -qq --disable-pip-version-check -r requirements-checkov.txt
	touch $@

$(RUNTIME_STAMP): requirements.txt $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -qq --disable-pip-version-check -r requirements.txt
	touch $@

$(DEV_STAMP): requirements.txt requirements-dev.txt $(VENV)/bin/python
	$(VENV)/bin/python -m pip install -qq --disable-pip-version-check -r requirements-dev.txt
	touch $(RUNTIME_STAMP) $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

clean:
	rm -rf cdk.out .pytest_cache
