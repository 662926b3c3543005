# The two commands of the README:
#   make synth   set up and synthesize your configuration (cdk.json) into cdk.out/ (no AWS credentials)
#   make test    set up and run the whole test suite: the product's tests and the gate of your configuration
# Everything is installed into this folder (.venv/, node_modules/) from the project's own files.
#
# Every target that synthesizes (synth, cdk, check, review, accept, test) takes the same three variables:
#   CONTEXT_FILE=<file.json>   a JSON object of settings (e.g. examples/gpu.json), given to the app as -c flags
#   SET='{"key": value, ...}'  a JSON object of settings written out, quoted once (wins over CONTEXT_FILE)
#   ARGS="-c key=value ..."    more arguments: settings as -c flags (for `make cdk`, the CDK command first; win over SET)
# `make help` lists the targets.

PYTHON ?= python3
VENV := .venv
# jsii runs the first `node` on PATH: put the pinned Node.js 22 (node_modules/.bin) and the venv first.
export PATH := $(CURDIR)/$(VENV)/bin:$(CURDIR)/node_modules/.bin:$(PATH)
# Python's bytecode cache (__pycache__/, git-ignored): some machines turn it off, and then every CLI synth and
# every test run compiles the app and the tests again (about 2 s of a warm `make test`).
unexport PYTHONDONTWRITEBYTECODE
# The CLI's periodic notices and telemetry are noise in CI logs.
export CDK_DISABLE_CLI_TELEMETRY := true

# What you give make is data, never shell: ARGS, SET, CONTEXT_FILE, BASE, LIVE, PYTEST_ARGS, VERSION, FROM, SINCE and ADOPT are exported as
# written (make expands nothing in them) and no recipe pastes them into a shell line. The tools get them from the
# environment: RUN (tooling/make_args.py) appends SET's settings as -c flags and the words of ARGS or PYTEST_ARGS,
# split as a shell splits them (quotes, backslashes) with nothing run; single values are quoted ("$$BASE").
override ARGS := $(value ARGS)
override SET := $(value SET)
override CONTEXT_FILE := $(value CONTEXT_FILE)
override BASE := $(value BASE)
override LIVE := $(value LIVE)
override PYTEST_ARGS := $(value PYTEST_ARGS)
override VERSION := $(value VERSION)
override FROM := $(value FROM)
override SINCE := $(value SINCE)
override ADOPT := $(value ADOPT)
export ARGS SET CONTEXT_FILE BASE LIVE PYTEST_ARGS VERSION FROM SINCE ADOPT
RUN := python -m tooling.make_args
# The CDK CLI with CONTEXT_FILE's settings as -c flags (a missing or unreadable file stops here, exit 2).
CDK := python -m tooling.cdk
ifdef CDK_ARGS
$(error CDK_ARGS is no longer read: pass settings with ARGS, e.g. make synth ARGS="-c clusterName=payments-dev")
endif
NODE_STAMP := node_modules/.installed
RUNTIME_STAMP := $(VENV)/.runtime-installed
DEV_STAMP := $(VENV)/.dev-installed
# checkov lives in a venv of its own: its dependencies would fight the app's pins.
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed

.PHONY: help synth test check setup hooks cdk docs snapshots security-report review accept manifests newcomer bench rehearsal \
	transitions 	upstream-examples template-diff karpenter-import release-report release-ids clean lint scan cfn-lint checkov gate pytest pytest-cli pytest-examples pytest-commands

## help: list the targets
help:
	@echo "Your cluster:"
	@sed -n 's/^## /  /p' $(MAKEFILE_LIST)
	@echo "Settings for one run: CONTEXT_FILE=<file.json>, SET='<JSON object, quoted once>', ARGS=\"-c key=value\" (each"
	@echo "wins over the one before); what you give make is data: nothing in it runs as a shell command"
	@echo "Developing this project:"
	@sed -n 's/^### /  /p' $(MAKEFILE_LIST)

## synth: set up and synthesize your configuration into cdk.out/ (CONTEXT_FILE, SET='{"key": value}', ARGS="-c key=value")
synth: $(RUNTIME_STAMP) $(NODE_STAMP)
	@$(RUN) SET ARGS -- $(CDK) --check
	@# The CLI never removes old templates: synthesize into a folder of its own, and replace cdk.out/ with it
	@# only when the synth succeeds (a failed one keeps the last good cdk.out/).
	rm -rf cdk.out.next
	$(RUN) SET ARGS -- $(CDK) synth --quiet --output cdk.out.next
	rm -rf cdk.out && mv cdk.out.next cdk.out
	@echo "Synthesized: $$(cd cdk.out && ls *.template.json | tr '\n' ' ')"

## test: set up and run the whole test suite: the product's tests, the gate of your configuration, lint and the scanners
# Jobs side by side (make schedules them; each one's output is printed whole when it ends): lint, the
# scanners, the in-process tests, and the tests that run commands as a user types them. The in-process tests are
# the longest chain (one process): the other jobs (the tests that run commands, the scanners) run niced (NICE), on
# the CPU time it leaves.
# At the end it prints each job's wall and CPU time (tooling/timed.py), so that growth is seen in every run.
test: $(DEV_STAMP) $(NODE_STAMP) $(CHECKOV_STAMP)
	@$(RUN) SET ARGS -- $(CDK) --check-config
	@times=$$(mktemp); JOB_TIMES=$$times $(MAKE) --no-print-directory -j6 --output-sync=target pytest pytest-cli lint scan; \
		status=$$?; python -m tooling.timed --report $$times; rm -f $$times; exit $$status

## check: only the gate of your configuration: synth of every environment, cdk-nag, cfn-lint, CRD schema and CEL (no checkov)
check: $(DEV_STAMP) $(NODE_STAMP)
	@$(RUN) SET ARGS -- $(CDK) --check-config
	@$(MAKE) --no-print-directory gate
	$(GATE_ENV) python -m pytest -q -p no:cacheprovider -p no:hypothesispytest tests/test_your_configuration.py
	python -m tooling.scans.scan cfn-lint $(GATE)/cdk.out/*.template.json

### gate: synthesize your configuration through the CLI into .gate/ (what the gate's tests and the scanners read)
# The gate's synth: your configuration (cdk.json, CONTEXT_FILE, SET, ARGS) through the CDK CLI as `make synth` runs it,
# into .gate/ (your cdk.out/ is left alone); tests/test_your_configuration.py and the scanners read it.
GATE := .gate
# The jobs beside the in-process tests yield to them (`make test`); run alone, nice changes nothing.
NICE := nice -n 10
# (tests/test_your_configuration.py reads CONTEXT_FILE, SET and ARGS from the environment, as RUN does)
GATE_ENV = KARPENTER_GATE_OUT=$(GATE)
gate: $(RUNTIME_STAMP) $(NODE_STAMP)
	@rm -rf $(GATE) && mkdir -p $(GATE)
	@$(TIMED) gate -- $(RUN) SET ARGS -- $(CDK) synth --quiet --output $(GATE)/cdk.out >$(GATE)/synth.out 2>$(GATE)/synth.err; \
		status=$$?; echo $$status >$(GATE)/synth.status; \
		if [ -s $(GATE)/synth.err ]; then cat $(GATE)/synth.err >&2; fi; \
		if [ $$status -ne 0 ]; then echo "make synth of your configuration failed" >&2; fi; \
		exit $$status

# Each job's commands run through TIMED: under `make test` (JOB_TIMES set) it records their wall and CPU time.
TIMED := python -m tooling.timed

# A pytest run that selects nothing (PYTEST_ARGS="-k ..." naming tests of another job) is not a failure.
PYTEST := python -m pytest
NO_TESTS_IS_FINE := || [ $$? -eq 5 ]

### pytest: the in-process tests (PYTEST_ARGS)
pytest: $(DEV_STAMP) $(NODE_STAMP)
	$(TIMED) pytest -- $(RUN) PYTEST_ARGS -- $(PYTEST) -m "not cli" $(NO_TESTS_IS_FINE)

### pytest-cli: the tests that run commands as a user types them (PYTEST_ARGS), as two jobs: examples, commands
pytest-cli: pytest-examples pytest-commands
# (each collects only the test files that have such tests)
CLI_TESTS = $(shell grep -l '@pytest.mark.cli' tests/test_*.py)
EXAMPLE_TESTS = $(shell grep -l '@pytest.mark.examples' tests/test_*.py)
### pytest-examples: every example of examples/ through the README's command
pytest-examples: $(DEV_STAMP) $(NODE_STAMP) gate
	$(GATE_ENV) $(TIMED) pytest-examples -- $(NICE) $(RUN) PYTEST_ARGS -- $(PYTEST) -m "cli and examples" $(EXAMPLE_TESTS) \
		$(NO_TESTS_IS_FINE)
### pytest-commands: the other tests that run commands (the gate of your configuration among them)
pytest-commands: $(DEV_STAMP) $(NODE_STAMP) gate
	$(GATE_ENV) $(TIMED) pytest-commands -- $(NICE) $(RUN) PYTEST_ARGS -- $(PYTEST) -m "cli and not examples" $(CLI_TESTS) \
		$(NO_TESTS_IS_FINE)

### lint: ruff (lint and format) and strict mypy, as the pre-commit hooks run them
lint: $(DEV_STAMP)
	$(TIMED) lint -- ruff check --no-cache .
	$(TIMED) lint -- ruff format --check --no-cache .
	$(TIMED) lint -- mypy

### scan: cfn-lint and checkov over this app's templates (its snapshots), templates/ and your configuration's synth
scan: cfn-lint checkov
### cfn-lint: cfn-lint over the same templates (one of the two scanners of `make scan`)
cfn-lint: $(DEV_STAMP) gate
	$(TIMED) cfn-lint -- $(NICE) python -m tooling.scans.scan cfn-lint --expect-findings tests/data/broken-template.yaml \
		tests/__snapshots__/test_snapshots/*.json templates/*.yaml $(GATE)/cdk.out/*.template.json
### checkov: checkov over the same templates, every finding skipped with a reason (the other scanner)
checkov: $(DEV_STAMP) $(CHECKOV_STAMP) gate
	$(TIMED) checkov -- $(NICE) python -m tooling.scans.scan checkov tests/__snapshots__/test_snapshots/*.json \
		templates/*.yaml $(GATE)/cdk.out/*.template.json

## setup: install the toolchain only (.venv/, node_modules/, .venv-checkov/)
setup: $(DEV_STAMP) $(NODE_STAMP) $(CHECKOV_STAMP)

### hooks: install the git hooks (ruff and mypy on every commit)
# Git hooks: pre-commit (pinned in requirements-hooks.txt) runs ruff and mypy on every commit.
hooks: $(DEV_STAMP)
	python -m pip install -q -r requirements-hooks.txt
	pre-commit install

## cdk: any CDK command with the project's toolchain, e.g. make cdk ARGS="deploy --all" (CONTEXT_FILE, SET)
cdk: $(RUNTIME_STAMP) $(NODE_STAMP)
	$(RUN) SET ARGS -- $(CDK)

### docs: regenerate what docs/ derives from the code
# Regenerate docs/configuration-reference.md and docs/acknowledgments.md from the code.
docs: $(RUNTIME_STAMP) $(NODE_STAMP)
	python -m tooling.generate_docs

### snapshots: accept the product's own test snapshots (developers of this project)
snapshots: $(DEV_STAMP) $(NODE_STAMP)
	python -m pytest tests/test_snapshots.py --snapshot-update -q

### rehearsal: create and destroy critical paths of the product's configurations
# Lifecycle rehearsal: create and destroy critical paths (worst case) of the default, node-group, Pod Identity,
# production and existing-cluster configurations, from CloudFormation's semantics over the synthesized
# templates.
rehearsal: $(DEV_STAMP) $(NODE_STAMP)
	python -m pytest tests/test_rehearsal.py -q -s -k critical_paths

### transitions: every setting moved from its default and back, reviewed as a deploy and as its rollback
# The transition matrix (tooling/review/transitions.py): each setting of the configuration model changed on a running
# stack -- modes: every pair -- synthesized, reviewed, and the verdict checked against the mirrored rules.
transitions: $(DEV_STAMP) $(NODE_STAMP)
	python -m tooling.review.transitions

## upstream-examples: Karpenter's own examples/v1 through nodeManifests: accepted or refused, what differs (ARGS="--settings <file>": its typed settings)
upstream-examples: $(DEV_STAMP) $(NODE_STAMP)
	@$(RUN) ARGS -- python -m tooling.releases.upstream_examples

## template-diff: what the project's Karpenter template changes from upstream's (templates/upstream/), and why
template-diff: $(RUNTIME_STAMP)
	@python -m tooling.releases.template_parity

### karpenter-import: import a Karpenter release, VERSION=1.15.0 (FROM=<folder>: its charts and cloudformation.yaml from a folder)
# Pulls the release's karpenter and karpenter-crd charts with the project's Helm and its getting-started CloudFormation
# template (or reads them from FROM), and writes everything the project pins per version
# (tooling/releases/karpenter_import.py); the project's template is re-applied and printed as a diff to review. Bad
# input: one line, nothing written.
karpenter-import: $(DEV_STAMP)
	python -m tooling.releases.karpenter_import "$$VERSION" $${FROM:+--from "$$FROM"}

## release-report: what moving between two kept Karpenter releases changes, SINCE=1.13.1 VERSION=1.14.1 (exit 1: a decision)
# CRD fields and CEL rules, chart values, feature gates and IAM grants added, removed or changed, each with the
# settings it touches (tooling/releases/release_report.py); exits 1 when a change needs a decision, listed one per line.
release-report: $(DEV_STAMP)
	@python -m tooling.releases.release_report "$$SINCE" "$$VERSION"

### release-ids: record every logical id later versions must keep (when cutting a release)
# When cutting a release: record every logical id (nested stacks included) that later versions must
# keep, so that a refactor cannot make CloudFormation replace a deployed resource unnoticed.
release-ids: $(DEV_STAMP) $(NODE_STAMP)
	python -m tooling.releases.release_logical_ids

### bench: synth time of this project against aws_eks + cdk-eks-karpenter
# Synth time of this project against aws_eks + cdk-eks-karpenter (throwaway venv), alternating.
bench: $(RUNTIME_STAMP) $(NODE_STAMP)
	$(RUN) ARGS -- python -m tooling.bench.bench

## review: what deploying your synth over your accepted baseline would do (CONTEXT_FILE, SET, ARGS, BASE=<git rev>; LIVE=1: over the deployed stacks; ADOPT=<kubectl get -o yaml file>|live: what it does to the Karpenter objects the cluster runs)
# Exits 1 on an unacknowledged replacement or deletion of a stateful resource, or a deploy that would fail.
review: $(DEV_STAMP) $(NODE_STAMP)
	$(RUN) SET ARGS -- python -m tooling.review $${BASE:+--base "$$BASE"} $${LIVE:+--live}

## manifests: every Kubernetes object and Helm values document your configuration applies, in apply order (CONTEXT_FILE, SET, ARGS; ARGS=--write: write gitops/<stack>/ for nodeObjects "gitops")
# Synthesizes in-process as the review does (tooling/manifests.py) and reads what each stack applies from the synth.
manifests: $(RUNTIME_STAMP) $(NODE_STAMP)
	@$(RUN) SET ARGS -- python -m tooling.manifests

## accept: after a reviewed change, make your current synth the baseline (baseline/; commit it)
accept: $(DEV_STAMP) $(NODE_STAMP)
	$(RUN) SET ARGS -- python -m tooling.review --accept

### newcomer: a copy of this repository made someone's own, the README's two commands, then an invalid edit
newcomer: $(DEV_STAMP) $(NODE_STAMP) $(CHECKOV_STAMP)
	python -m tooling.newcomer

## security-report: cdk-nag, cfn-lint and checkov results of your configuration as tables
# cdk-nag and cfn-lint results of the current configuration as tables; exits 1 on anything open.
security-report: $(DEV_STAMP) $(NODE_STAMP) $(CHECKOV_STAMP)
	$(RUN) SET ARGS -- python -m tooling.scans.security_report

# (tooling/python_floor.py: an older Python than the pinned packages need is told so in one line)
$(VENV)/bin/python:
	@$(PYTHON) tooling/python_floor.py
	$(PYTHON) -m venv $(VENV)

$(CHECKOV_STAMP): requirements-checkov.txt
	@$(PYTHON) tooling/python_floor.py
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

## clean: remove cdk.out/, the gate's synth (.gate/) and pytest's cache
clean:
	rm -rf cdk.out $(GATE) .pytest_cache
