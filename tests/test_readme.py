"""The README and docs/ as a first-time reader meets them: a table of contents that leads somewhere,
links that resolve, commands that exist, recipes that are valid configurations, and no figure that
can go stale without a test noticing."""

from __future__ import annotations

import json
import re
import shlex
import textwrap
from pathlib import Path

import pytest

from karpenter_stack.config import AppConfig, load_config, load_environments
from tests.conftest import ROOT, TODAY
from tooling.configurations import PRODUCT_CONTEXT

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS, ROOT / "CHANGELOG.md"]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a `# comment` in a bash block is no heading)."""
    return FENCE.sub("", text)


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for match in re.finditer(r"^#{1,6} (.+)$", _prose(path.read_text()), re.M):
        base = _anchor(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchors.add(base if count == 0 else f"{base}-{count}")
    return anchors


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    level = heading.split(" ")[0]
    end = re.search(rf"^#{{1,{len(level)}}} ", text[start + len(heading) + 2 :], re.M)
    return text[start : start + len(heading) + 2 + end.start()] if end else text[start:]


def _code_blocks(text: str, language: str) -> list[str]:
    """Fenced blocks of one language, also those indented under a list item."""
    blocks = re.findall(rf"^([ \t]*)```{language}\n(.*?)^\1```", text, re.M | re.S)
    return [textwrap.dedent(block) for _, block in blocks]


def test_readme_has_a_table_of_contents_whose_links_resolve_to_headings():
    readme = README.read_text()
    contents = _section(readme, "## Contents")
    targets = LINK.findall(contents)
    assert targets and all(t.startswith("#") for t in targets), targets
    anchors = _anchors(README)
    assert [t for t in targets if t[1:] not in anchors] == []
    # every section of the README is in the contents, in order
    sections = [_anchor(h) for h in re.findall(r"^## (.+)$", _prose(readme), re.M) if h != "Contents"]
    assert [t[1:] for t in targets if t[1:] in sections] == sections


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    """Files and folders exist; an anchor names a heading of the page it points into."""
    broken = []
    for target in LINK.findall(_prose(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(target)
    assert broken == []


def test_every_docs_page_is_linked_from_the_readme():
    links = {
        (README.parent / t.partition("#")[0]).resolve()
        for t in LINK.findall(README.read_text())
        if not re.match(r"[a-z]+:", t)
    }
    assert [p.name for p in DOCS if p.resolve() not in links] == []


def test_readme_has_no_figure_that_can_go_stale():
    """No test counts, no durations (they change with the machine and the suite), no versions other
    than the ones the code defaults to."""
    readme = README.read_text()
    counts = re.findall(
        r"\b\d[\d,]*\s+(?:tests?|passed|failed|errors?|warnings?|test cases|classes|findings)\b", readme
    )
    assert counts == []
    durations = re.findall(
        r"~?\b\d+(?:[.,]\d+)?(?:\s*[-–]\s*\d+)?\s*(?:s|secs?|seconds?|ms|min|mins|minutes?|h|hours?)\b(?!-)", readme
    )
    assert durations == []
    default = AppConfig()
    assert set(re.findall(r"Karpenter\]?(?:\([^)]*\))? (\d+\.\d+\.\d+)", readme)) == {default.karpenter_version}
    assert set(re.findall(r"Kubernetes (1\.\d+)\b", readme)) <= {default.kubernetes_version}
    assert not re.search(r"\b1\.\d+\s*[-–]\s*1\.\d+\b", readme), "a version range goes stale: name no range"


def test_every_make_target_the_docs_name_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
    # commands: in backticks or at the start of a line of a code block (not prose such as "make it yours")
    named = {t for page in PAGES for t in re.findall(r"(?:`|^[ \t]*)make ([a-z][a-z-]+)\b", page.read_text(), re.M)}
    assert sorted(named - targets) == []


def test_every_example_file_the_docs_name_exists():
    named = {f for page in PAGES for f in re.findall(r"\bexamples/([\w.-]+\.json)\b", page.read_text())}
    assert named and sorted(f for f in named if not (ROOT / "examples" / f).exists()) == []


def test_quickstart_deploy_settings_give_a_public_endpoint_for_one_ip_and_the_demo_workload():
    quickstart = _section(README.read_text(), "## Quickstart")
    (deploy,) = [
        line for block in _code_blocks(quickstart, "bash") for line in block.splitlines() if 'ARGS="deploy' in line
    ]
    args = shlex.split(deploy.replace("$MY_IP", "203.0.113.10"))
    assert args[:2] == ["make", "cdk"]
    words = shlex.split(args[2].removeprefix("ARGS="))
    assert words[:2] == ["deploy", "--all"]
    flags = dict(w.split("=", 1) for w in words[3::2])
    assert words[2::2] == ["-c"] * len(flags)
    config = load_config(flags, today=TODAY)
    assert config.endpoint_access == "public-and-private"
    assert config.public_access_cidrs == ["203.0.113.10/32"]
    assert config.demo_workload is True
    # and the README tells the reader which stack it creates and how to destroy it
    assert f"`{config.cluster_name}`" in quickstart and 'make cdk ARGS="destroy --all"' in quickstart


def test_make_it_yours_environments_are_a_valid_configuration_named_as_the_readme_says():
    section = _section(README.read_text(), "## Make it yours")
    (snippet,) = [b for b in _code_blocks(section, "json") if '"environments"' in b]
    cdk_json = PRODUCT_CONTEXT  # the shipped cdk.json the README talks about
    environments = json.loads("{" + snippet + "}")["environments"]
    configs = load_environments({"clusterName": cdk_json["clusterName"], "environments": environments}, today=TODAY)
    assert configs["prod"].profile == "production"
    assert f'make cdk ARGS="deploy {configs["prod"].cluster_name}"' in section


def test_on_demand_production_recipe_keeps_the_system_pool_and_launches_only_on_demand():
    from karpenter_stack.config.merge import SYSTEM_POOL

    section = _section(README.read_text(), "### On-demand-only production that keeps the system pool")
    (snippet,) = _code_blocks(section, "json")
    settings = json.loads(snippet)
    config = load_config(settings, today=TODAY)
    assert config.profile == "production"
    assert [p.name for p in config.node_pools] == ["system", "default"]
    assert all(p.capacity_types == ["on-demand"] for p in config.node_pools)
    (system,) = [p for p in settings["nodePools"] if p["name"] == "system"]
    assert system == SYSTEM_POOL  # exactly the pool the profile would have added
    # without the recipe's nodePools the profile adds the same system pool, so the recipe keeps it
    without = {k: v for k, v in settings.items() if k != "nodePools"}
    profile_pools = load_config(without, today=TODAY).node_pools
    assert [p.name for p in profile_pools] == ["system", "default"]
    assert profile_pools[0] == config.node_pools[0]


def test_documented_commands_for_one_run_use_args_never_the_retired_cdk_args():
    assert [p.name for p in [README, *DOCS] if "CDK_ARGS" in p.read_text()] == []


def test_every_direct_dependency_is_explained_in_the_dependencies_page():
    """docs/dependencies.md says why each direct dependency is there: the pinned files' first block
    (before the first blank line; what follows is transitive) and package.json's devDependencies."""
    explained = set(re.findall(r"^\| `([^`]+)`", (ROOT / "docs" / "dependencies.md").read_text(), re.M))
    explained |= {
        name.strip("` ")
        for row in re.findall(r"^\| (`[^|]+`) \|", (ROOT / "docs" / "dependencies.md").read_text(), re.M)
        for name in row.split(",")
    }
    direct = set(json.loads((ROOT / "package.json").read_text())["devDependencies"])
    for name in ("requirements.txt", "requirements-dev.txt", "requirements-checkov.txt", "requirements-hooks.txt"):
        block = (ROOT / name).read_text().split("\n\n", 1)[0]
        direct |= {
            re.sub(r"-v\d+$", "-vNN", line.split("==")[0])
            for line in block.splitlines()
            if line and not line.startswith(("#", "-r "))
        }
    assert sorted(direct - explained) == []


def test_gpu_recipe_describes_the_example_file():
    section = _section(README.read_text(), "### A GPU node pool")
    gpu = json.loads((ROOT / "examples" / "gpu.json").read_text())
    (pool,) = [p for p in gpu["nodePools"] if p["name"] == "gpu"]
    (count,) = [r for r in pool["requirements"] if r["key"] == "karpenter.k8s.aws/instance-gpu-count"]
    assert count["operator"] == "Lte" and f"at most {count['values'][0]} GPUs each" in section
    assert f"capped at {pool['limits']['nvidia.com/gpu']} GPUs in total" in section
    assert pool["capacityTypes"] == ["on-demand"] and pool["consolidationPolicy"] == "WhenEmpty"
    assert [t["key"] for t in pool["taints"]] == ["nvidia.com/gpu"] and "`nvidia.com/gpu:NoSchedule`" in section
    assert any(p["name"] == "default" for p in gpu["nodePools"]) and "keeps the default pool" in section
