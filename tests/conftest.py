"""Shared synthesis: each configuration is synthesized once per test session."""

from __future__ import annotations

import atexit
import functools
import gc
import json
import os
import shutil
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# jsii starts `node` from PATH on the first aws_cdk import: make it the project's pinned Node.js 22,
# also when pytest is run without make.
os.environ["PATH"] = os.pathsep.join(
    [str(ROOT / ".venv" / "bin"), str(ROOT / "node_modules" / ".bin"), os.environ.get("PATH", "")]
)

# A deprecated aws-cdk-lib API is an error in every in-process build (jsii's kernel checks each call), not a
# warning on stderr: the suite proves "no deprecation warning" for every configuration it builds.
os.environ["JSII_DEPRECATED"] = "fail"

# A temporary directory of this session's own, for everything it starts (jsii's node, which reads TMPDIR
# once, the CDK CLI, the scanners): what another process leaves in or removes from the machine's temp
# directory cannot change a result, and nothing of this session outlives it.
_SESSION_TMP = tempfile.mkdtemp(prefix="karpenter-suite-")
os.environ["TMPDIR"] = _SESSION_TMP
tempfile.tempdir = _SESSION_TMP
atexit.register(shutil.rmtree, _SESSION_TMP, ignore_errors=True)

import pytest  # noqa: E402
from aws_cdk.assertions import Template  # noqa: E402

from karpenter_stack import context_sources  # noqa: E402
from karpenter_stack.application import build_deferred, new_app  # noqa: E402
from karpenter_stack.security import findings  # noqa: E402
from tooling.configurations import (  # noqa: E402
    ACCESS_ENTRIES,
    ALTERNATIVE,
    EXISTING,
    POD_IDENTITY,
    PRODUCT,
    PRODUCT_CONTEXT,
    PRODUCTION,
)

context_sources.project_dir = lambda: PRODUCT  # where the app and the scripts read cdk.json, in this session
# The date the EKS support calendar is checked against in tests (results must not depend on the day).
TODAY = date(2026, 11, 21)


# Proof that the product's tests never read the user's files: the interpreter reports every file it opens
# (PEP 578 audit events); opening the working copy's cdk.json or cdk.context.json during a test other than the
# gate of the user's configuration fails that test, and the run.
_USERS_FILES = {str(ROOT / "cdk.json"), str(ROOT / "cdk.context.json")}
_USERS_GATE = "tests/test_your_configuration.py::"
_RUNNING: list[str] = []
_READ_BY_PRODUCT_TESTS: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _RUNNING and isinstance(args[0], (str, Path)):
        path = os.path.abspath(args[0])
        if path in _USERS_FILES and not _RUNNING[0].startswith(_USERS_GATE):
            _READ_BY_PRODUCT_TESTS.append(f"{_RUNNING[0]} read {Path(path).name}")
            raise RuntimeError(f"a product test read the user's {Path(path).name}; use tooling/product/")


sys.addaudithook(_audit)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Any:
    _RUNNING[:] = [item.nodeid]
    try:
        return (yield)
    finally:
        _RUNNING.clear()


def pytest_sessionstart(session: pytest.Session) -> None:
    """A run that includes the gate of your configuration checks that configuration first, before any test
    module is imported: an invalid edit stops `make test` in about a second."""
    gate = "tests/test_your_configuration.py"
    for arg in session.config.args:
        path = Path(arg.split("::")[0]).resolve()
        if path == ROOT or path == ROOT / "tests" or path == ROOT / gate:
            check_your_configuration()
            return


def pytest_collection_finish(session: pytest.Session) -> None:
    """The session holds large heaps for its whole length (jsii's object references, the synthesized templates):
    with Python's default thresholds the cyclic collector ran about 6,400 times, 6 s of a 45 s run, scanning them
    again and again. What collection imported is frozen (never scanned again), and the youngest generation is
    collected every 50,000 allocations instead of 700: 640 collections, 2.3 s (most of it pytest's own final ones)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 50)


def check_your_configuration() -> None:
    """An invalid configuration of yours stops the run before any test, with the message `make synth` gives
    (`make test` asks tooling/cdk.py --check-config first; this covers pytest run by hand)."""
    from karpenter_stack.preflight import stop_reason
    from tests.test_your_configuration import ARGS, ARGS_ERROR, CONTEXT_FILE

    stop = (
        (ARGS_ERROR, "your configuration is invalid (above)") if ARGS_ERROR else stop_reason(CONTEXT_FILE, ARGS, ROOT)
    )
    if stop is not None:
        print(f"\n{stop[0]}", file=sys.stderr)
        raise pytest.UsageError(f"{stop[1]}; nothing was tested")


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _READ_BY_PRODUCT_TESTS:  # also when the test swallowed the error
        print("\n" + "\n".join(_READ_BY_PRODUCT_TESTS), file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cli: runs commands as a user types them (tests/commands.py; `make pytest-cli` runs these)"
    )
    config.addinivalue_line(
        "markers", "examples: the examples of examples/ through the README's command (`make pytest-examples`)"
    )


class Synthesized:
    """One synthesized configuration: the stack, its template and the Karpenter nested template."""

    def __init__(self, overrides: dict[str, Any], raw_findings: bool = False) -> None:
        # Path metadata on, as `cdk synth` does: templates under test are the ones reviewers see.
        self.app = new_app(context={**PRODUCT_CONTEXT, "aws:cdk:enable-path-metadata": True, **overrides})
        (self.stack,), register = build_deferred(self.app)
        # The cdk-nag findings before any acknowledgment, from this same build (security gate tests).
        self.raw_findings = (
            findings(self.app, ["AwsSolutions", *self.config.additional_nag_packs]) if raw_findings else None
        )
        register()
        self.template = Template.from_stack(self.stack)
        self.json = self.template.to_json()

    # The nested Karpenter stack's template, read when a test first asks (a jsii round trip of its whole template;
    # most builds are read through the parent's template alone).
    @functools.cached_property
    def karpenter(self) -> Template:
        network = getattr(self.stack, "network", None)  # none on an existing cluster
        if network is not None and network.lookup_pending:
            raise AttributeError("nothing but the lookup placeholder was built")
        return Template.from_stack(self.stack.karpenter.infra)

    @functools.cached_property
    def karpenter_json(self) -> dict[str, Any]:
        return self.karpenter.to_json()

    @property
    def config(self):
        return self.stack.config


_cache: dict[str, Synthesized] = {}


def synth(*, raw_findings: bool = False, **overrides: Any) -> Synthesized:
    """The configuration ``overrides`` synthesized once per session; with ``raw_findings``, also its
    cdk-nag findings before acknowledgments (a cached synthesis without them is built again)."""
    key = json.dumps(overrides, sort_keys=True)
    if key not in _cache or (raw_findings and _cache[key].raw_findings is None):
        _cache[key] = Synthesized(overrides, raw_findings=raw_findings)
    return _cache[key]


@pytest.fixture(scope="session")
def default() -> Synthesized:
    return synth(raw_findings=True)  # also gated by tests/test_security_gate.py


@pytest.fixture(scope="session")
def alternative() -> Synthesized:
    return synth(raw_findings=True, **ALTERNATIVE)  # also gated by tests/test_security_gate.py


@pytest.fixture(scope="session")
def production() -> Synthesized:
    return synth(**PRODUCTION)


@pytest.fixture(scope="session")
def access_entries() -> Synthesized:
    return synth(**ACCESS_ENTRIES)


@pytest.fixture(scope="session")
def pod_identity() -> Synthesized:
    return synth(**POD_IDENTITY)


# A template cfn-lint must refuse (an unknown property): tests/test_synth_lint.py.
BROKEN_TEMPLATE = ROOT / "tests" / "data" / "broken-template.yaml"


@pytest.fixture(scope="session")
def existing() -> Synthesized:
    return synth(**EXISTING)


def _example_fixture(path: Path):
    @pytest.fixture(scope="session")
    def example() -> Synthesized:
        return synth(**json.loads(path.read_text()))

    example.__doc__ = f"{path.relative_to(ROOT)}, as `make synth CONTEXT_FILE={path.relative_to(ROOT)}` builds it."
    return example


# Every other file of examples/ as a fixture example_<name> (existing-cluster.json is `existing`):
# snapshot-, schema- and CEL-tested like the configurations above.
# (examples with several environments, e.g. pipeline.json, are apps of several stacks: `delivery` below)
EXAMPLE_FIXTURES: dict[str, Path] = {
    f"example_{path.stem.replace('-', '_')}": path
    for path in sorted((ROOT / "examples").glob("*.json"))
    if path.name != "existing-cluster.json" and "environments" not in json.loads(path.read_text())
}
for _name, _path in EXAMPLE_FIXTURES.items():
    globals()[_name] = _example_fixture(_path)


def zone_lookups(environments: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """What the CLI caches in cdk.context.json on an environment's first synth with credentials: its
    availability zones (three per region here)."""
    return {
        f"availability-zones:account={env['account']}:region={env['region']}": [f"{env['region']}{z}" for z in "abc"]
        for env in environments.values()
    }


class Delivered:
    """examples/pipeline.json, with NIST 800-53 R5 on as well: the pipeline stack, the environments' stages
    and every template of the cloud assembly (nested assemblies included)."""

    PACKS = ["AwsSolutions", "NIST80053R5"]

    def __init__(self) -> None:
        settings = json.loads((ROOT / "examples" / "pipeline.json").read_text())
        self.app = new_app(
            context={
                **PRODUCT_CONTEXT,
                "aws:cdk:enable-path-metadata": True,
                **settings,
                "additionalNagPacks": ["NIST80053R5"],
                **zone_lookups(settings["environments"]),
            }
        )
        self.stacks, register = build_deferred(self.app, today=TODAY)
        self.raw_findings = findings(self.app, self.PACKS)
        register()
        self.pipeline_stack = next(c for c in self.app.node.children if type(c).__name__ == "DeliveryPipelineStack")
        self.assembly = self.app.synth()  # raises if any finding is neither fixed nor acknowledged
        self.json = Template.from_stack(self.pipeline_stack).to_json()

    def templates(self) -> dict[str, Path]:
        """file name -> path of every template in the assembly (the stages' are in nested assemblies)."""
        return {p.name: p for p in sorted(Path(self.app.outdir).rglob("*.template.json"))}


@pytest.fixture(scope="session")
def karpenter_1_13() -> Synthesized:
    """The default configuration on the previous imported Karpenter release (1.13.1; the default is 1.14.1): what a
    cluster runs before the upgrade to the current release, and what a downgrade moves to."""
    return synth(karpenterVersion="1.13.1")


@pytest.fixture(scope="session")
def delivery() -> Delivered:
    return Delivered()


@pytest.fixture(scope="session")
def by_hand(tmp_path_factory) -> dict[str, Any]:
    """examples/pipeline.json's environments without the pipeline, as `cdk deploy` from a laptop deploys
    them (NIST 800-53 R5 on, as in `delivery`): stack name -> stack, synthesized."""
    environments = json.loads((ROOT / "examples" / "pipeline.json").read_text())["environments"]
    app = new_app(
        context={
            **PRODUCT_CONTEXT,
            "aws:cdk:enable-path-metadata": True,
            "environments": environments,
            "additionalNagPacks": ["NIST80053R5"],
            **zone_lookups(environments),
        },
        outdir=str(tmp_path_factory.mktemp("by-hand")),
    )
    stacks, register = build_deferred(app, today=TODAY)
    register()
    app.synth()
    return {s.stack_name: s for s in stacks}
