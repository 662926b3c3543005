"""The README and docs/ as a first-time reader meets them: a table of contents that leads somewhere,
links that resolve, commands that exist, recipes that are valid configurations, and no figure that
can go stale without a test noticing."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from karpenter_stack.config import AppConfig, load_config, load_environments
from tests.conftest import ROOT, TODAY
from tooling.configurations import PRODUCT, PRODUCT_CONTEXT

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


# --- every snippet of the README, as a newcomer runs it on a fresh clone -------------------------------------------
# Each fenced block is a set of commands or of settings. A command either runs offline (`make synth ...`: the suite
# runs it) or needs AWS (credentials, a deployed cluster, the network): then the block marks it so (an `export
# AWS_PROFILE=...` before it, or a comment naming credentials) and its arguments are checked as far as they can be
# offline. Settings are checked where the README says to put them. Anything else fails: a new block is classified
# here first.

OFFLINE_VARIABLES = ("CONTEXT_FILE", "SET", "ARGS")
AWS_COMMANDS = ("bootstrap", "deploy", "destroy", "diff")
# The README's placeholder for "your values" (the prose: copy the example and fill it in), and the deploy's IP.
YOUR_VALUES = {"my-cluster.json": "examples/existing-cluster.json", "$MY_IP": "203.0.113.10"}


def _snippets() -> list[tuple[str, str, str]]:
    """(the heading it is under, language, text) of every fenced block of the README, indented ones too."""
    snippets, heading, lines = [], "", README.read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^([ \t]*)```(\w*)$", lines[i], re.ASCII)
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            snippets.append((heading, fence.group(2), textwrap.dedent("\n".join(lines[i + 1 : end]))))
            i = end
        elif lines[i].startswith("#"):
            heading = lines[i]
        i += 1
    return snippets


def _command(line: str) -> tuple[list[str], str]:
    """A line of a bash block: its words (the README's placeholders filled in), and its comment."""
    code, _, comment = line.partition(" # ")
    for placeholder, value in YOUR_VALUES.items():
        code = code.replace(placeholder, value)
    return shlex.split(code.replace("$(curl", "\\$(curl")), comment.strip()


def _kind(words: list[str]) -> str:
    """offline: the suite runs it; aws: it needs AWS (or the network) and is checked offline."""
    if words[:2] == ["make", "synth"] and all(w.split("=", 1)[0] in OFFLINE_VARIABLES for w in words[2:]):
        return "offline"
    if words == ["make", "test"]:
        return "suite"  # the README's test command: tests/test_newcomer.py runs it in a fresh copy
    if words[:2] == ["make", "manifests"] and all(w.split("=", 1)[0] in OFFLINE_VARIABLES for w in words[2:]):
        return "manifests"  # offline, in-process (tooling/manifests.py)
    if words[:2] == ["make", "cdk"] and shlex.split(_variables(words).get("ARGS", ""))[:1] in [
        [c] for c in AWS_COMMANDS
    ]:
        return "aws"
    if words[0] in ("kubectl", "aws") or (words[0] == "export" and all(w.startswith("AWS_") for w in words[1:])):
        return "aws"
    if len(words) == 3 and words[0].startswith("MY_IP=$(curl"):  # the address the deploy opens the endpoint to
        return "aws"
    raise AssertionError(f"a README command the suite does not know: {' '.join(words)!r}; classify it here")


def _variables(words: list[str]) -> dict[str, str]:
    return dict(w.split("=", 1) for w in words[2:])


def _classified() -> list[tuple[str, str, list[str], str]]:
    """(heading, kind, words or settings, comment) of every README snippet: commands one by one, settings whole."""
    out: list[tuple[str, str, list[str], str]] = []
    for heading, language, text in _snippets():
        if language == "json":
            out.append(
                (heading, "environments" if text.lstrip().startswith('"environments"') else "settings", [text], "")
            )
            continue
        assert language == "bash", f"a README block of another language: {language!r} under {heading!r}"
        marked = False
        for line in text.splitlines():
            if line.startswith("#"):
                marked |= "credentials" in line
                continue
            words, comment = _command(line)
            kind = _kind(words)
            marked |= words[0] == "export" or "credentials" in comment
            assert kind in ("offline", "manifests", "suite") or marked, (
                f"{line!r} needs AWS and its block does not say so"
            )
            out.append((heading, kind, words, comment))
    return out


def _project(tmp: Path, environments: dict[str, Any] | None = None) -> Path:
    """A fresh clone's cdk.json and cdk.context.json (the product's), with ``environments`` added."""
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(PRODUCT / "cdk.context.json", tmp / "cdk.context.json")
    cdk_json = json.loads((PRODUCT / "cdk.json").read_text())
    if environments is not None:
        cdk_json["context"]["environments"] = environments
    (tmp / "cdk.json").write_text(json.dumps(cdk_json))
    return tmp


def _stacks(root: Path, context_file: str | None, args: list[str]) -> list[str]:
    """What --check-config (the fast path of `make test`) says of this run, and the stacks it would build."""
    from karpenter_stack.config import stack_name_for
    from karpenter_stack.preflight import stop_reason, working_environments

    file = str(ROOT / context_file) if context_file else None
    assert stop_reason(file, args, root) is None
    return sorted(stack_name_for(c.cluster_name) for c in working_environments(file, args, root).values())


def _readme_environments() -> dict[str, Any]:
    ((text,),) = [words for _, kind, words, _ in _classified() if kind == "environments"]
    return json.loads("{" + text + "}")["environments"]


def _one_run(words: list[str]) -> tuple[str | None, list[str]]:
    """A make command's CONTEXT_FILE, and its SET and ARGS as the arguments tooling/make_args.py makes of them."""
    from tooling.make_args import arguments

    variables = _variables(words)
    return variables.get("CONTEXT_FILE"), arguments(["SET", "ARGS"], variables)


def test_every_readme_snippet_is_a_command_or_settings_the_suite_knows():
    """The README's blocks, counted: a new one is classified (and so checked) here first."""
    kinds = [kind for _, kind, _, _ in _classified()]
    assert len(_snippets()) == 10
    assert {k: kinds.count(k) for k in sorted(set(kinds))} == {
        "aws": 11,
        "environments": 1,
        "manifests": 2,
        "offline": 6,
        "settings": 1,
        "suite": 1,
    }


def test_the_readme_manifests_commands_run_as_written_on_a_fresh_clone(tmp_path, monkeypatch, capsys):
    """`make manifests` as the README gives it (in-process: tooling/manifests.py with the arguments make hands it),
    in a fresh clone's project folder: it prints every object in apply order, and --write writes the folder the
    recipe names."""
    from karpenter_stack import context_sources
    from tooling import manifests

    fresh = _project(tmp_path / "fresh")
    monkeypatch.setattr(context_sources, "project_dir", lambda: fresh)
    ran = []
    for _, kind, words, comment in _classified():
        if kind != "manifests":
            continue
        context_file, args = _one_run(words)
        assert manifests.main([*(["--context-file", str(ROOT / context_file)] if context_file else []), *args]) == 0
        out = capsys.readouterr().out
        if "--write" in args:
            assert out == "gitops/eks-karpenter/: 5 node objects, 5 file(s) written, 0 removed\n"
            assert "gitops/eks-karpenter/" in comment
        else:
            assert out.startswith("# Stack eks-karpenter: 9 documents, in the order they are applied\n")
        ran.append(" ".join(words))
    assert len(ran) == 2
    assert sorted(p.name for p in (fresh / "gitops" / "eks-karpenter").iterdir()) == [
        "10-ec2nodeclass-default.yaml",
        "10-ec2nodeclass-gpu.yaml",
        "30-nodepool-batch.yaml",
        "30-nodepool-default.yaml",
        "30-nodepool-gpu.yaml",
    ]


def test_the_readme_commands_that_need_aws_are_valid_offline_as_far_as_they_can_be(tmp_path):
    """The deploys' and destroys' settings pass --check-config on a fresh clone, and the stacks they name exist."""
    fresh = _project(tmp_path / "fresh")
    checked = []
    for _, kind, words, _ in _classified():
        if kind != "aws" or words[:2] != ["make", "cdk"]:
            continue
        context_file, args = _one_run(words)
        command = shlex.split(_variables(words)["ARGS"])[0]
        stacks = _stacks(fresh, context_file, args)
        named = [w for w in args[1:] if not w.startswith("-") and "=" not in w]
        if command in ("deploy", "destroy", "diff"):
            assert named in (["--all"], []) or set(named) <= set(stacks), (words, stacks)
            assert "--all" in args or named, words
        checked.append((command, stacks))
    assert checked == [
        ("bootstrap", ["eks-karpenter"]),
        ("deploy", ["eks-karpenter"]),
        ("destroy", ["eks-karpenter"]),
        ("deploy", ["shared-prod"]),
    ]


def test_the_readme_settings_work_alone_and_on_the_readmes_environments(tmp_path):
    """The environments of "Make it yours" synthesize offline from the shipped cdk.context.json (found by a newcomer
    trial: "Need to perform AWS calls for account 111122223333"); the production recipe works as a CONTEXT_FILE and
    as the keys of environments.prod, as the README says."""
    environments = _readme_environments()
    assert _stacks(_project(tmp_path / "envs", environments), None, []) == ["eks-karpenter-dev", "eks-karpenter-prod"]
    ((recipe,),) = [words for _, kind, words, _ in _classified() if kind == "settings"]
    (tmp_path / "recipe.json").write_text(recipe)
    assert _stacks(_project(tmp_path / "fresh"), str(tmp_path / "recipe.json"), []) == ["eks-karpenter"]
    prod = {**environments, "prod": {**environments["prod"], **json.loads(recipe)}}
    assert _stacks(_project(tmp_path / "prod", prod), None, []) == ["eks-karpenter-dev", "eks-karpenter-prod"]


def test_the_readme_recipes_work_on_a_cdk_json_with_environments_as_the_readme_says(tmp_path):
    """Found by a newcomer trial: on a cdk.json with environments, a recipe's -c settings applied to each one (the
    production profile refused the GPU recipe; the existing-cluster recipe built two stacks, one with another
    account's ARNs). The README says what to add; with it, each recipe builds the one stack it builds alone."""
    section = _section(README.read_text(), "## Recipes")
    (advice,) = re.findall(r"`(make synth CONTEXT_FILE=examples/gpu\.json [^`]+)`", section, re.ASCII)
    _, instead = _one_run(shlex.split(advice))
    fresh, with_environments = _project(tmp_path / "fresh"), _project(tmp_path / "envs", _readme_environments())
    recipes = [(w, c) for h, kind, w, c in _classified() if kind == "offline" and h.startswith("### ")]
    assert [_variables(w)["CONTEXT_FILE"] for w, _ in recipes] == [
        "examples/gpu.json",
        "examples/golden-image.json",
        "examples/own-manifests.json",
        "examples/existing-cluster.json",
    ]
    for words, comment in recipes:
        context_file, args = _one_run(words)
        alone = _stacks(fresh, context_file, args)
        assert _stacks(with_environments, context_file, [*args, *instead]) == alone
        said = re.search(r"stack (\S+),", comment, re.ASCII)
        assert alone == ([said.group(1)] if said else ["eks-karpenter"])
    # without the advice, the recipes' settings reach every environment, and the production one refuses them
    from karpenter_stack.preflight import stop_reason

    for recipe in ("examples/gpu.json", "examples/existing-cluster.json"):
        stop = stop_reason(str(ROOT / recipe), [], with_environments)
        assert stop is not None and stop[0].startswith("Configuration error:\n"), (recipe, stop)
        assert re.search(r"\b(environment prod\)|environments\.prod\.)", stop[0], re.ASCII), (recipe, stop)


def _readme_synth(words: list[str]):
    from tests import commands
    from tests.test_commands import EXAMPLE_SYNTH
    from tooling import workspace

    shared = [c for c in EXAMPLE_SYNTH.values() if list(c.args) == words]
    if shared:  # the same command as the examples' test: run once for both
        return commands.result(shared[0])
    name = "readme-" + "-".join(re.sub(r"[^\w.-]", "_", w, flags=re.ASCII) for w in words)
    return commands.result(commands.command(name, words, env=workspace.clean_env(), in_project=True))


@pytest.mark.cli
@pytest.mark.examples
def test_every_offline_readme_command_runs_as_written_on_a_fresh_clone():
    """`make synth` and every recipe's `make synth CONTEXT_FILE=...`, without AWS credentials, in a project folder
    of the product's files and cdk.json: exit 0, and the stacks the README names (the examples' synths are shared
    with tests/test_commands.py)."""
    ran = []
    for _, kind, words, comment in _classified():
        if kind != "offline":
            continue
        result = _readme_synth(words)
        assert result.returncode == 0, result.stderr
        top = sorted(
            p.name.removesuffix(".template.json")
            for p in (result.outdir / "cdk.out").glob("*.template.json")
            if not p.name.endswith(".nested.template.json")
        )
        said = re.search(r"stack (\S+),", comment, re.ASCII)
        assert top == [said.group(1) if said else "eks-karpenter"]
        assert result.stdout.splitlines()[-1].startswith(f"Synthesized: {top[0]}.template.json ")
        ran.append(" ".join(words))
    assert len(ran) == 6


# The tool behind each target that takes ARGS words of its own besides -c settings (their flags must be its own).
TOOL_OF = {
    "review": ROOT / "tooling" / "review" / "cli.py",
    "accept": ROOT / "tooling" / "review" / "cli.py",
    "security-report": ROOT / "tooling" / "scans" / "security_report.py",
    "manifests": ROOT / "tooling" / "manifests.py",
    "upstream-examples": ROOT / "tooling" / "releases" / "upstream_examples.py",
}
CDK_COMMANDS = (*AWS_COMMANDS, "synth", "list", "ls", "context", "doctor")


def _docs_make_commands() -> list[tuple[str, list[str]]]:
    """(page, words) of every `make` command in a bash block of the README and docs/, placeholders filled in."""
    found = []
    for page in [README, *DOCS]:
        for block in FENCE.findall(page.read_text()):
            if not block.startswith("```bash"):
                continue
            for line in block.splitlines()[1:-1]:
                line = line.strip().replace("$BASE_REF", "main")
                if line.startswith("make "):
                    found.append((page.name, _command(line)[0]))
    return found


def test_every_make_command_of_the_docs_is_valid_offline(tmp_path):
    """Every `make` command the docs give (README and docs/) can run as written, as far as it can without AWS: its
    target exists, it passes only variables make hands on, its CONTEXT_FILE exists, its settings pass the
    configuration check in a fresh clone, `make cdk` names a CDK command, and the other words of ARGS are the tool's
    own flags."""
    from karpenter_stack.preflight import stop_reason

    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
    exported = set(re.search(r"^export (ARGS .*)$", makefile, re.M).group(1).split())  # type: ignore[union-attr]
    fresh = _project(tmp_path / "fresh")
    commands = _docs_make_commands()
    for page, words in commands:
        where = f"{page}: {' '.join(words)}"
        target, variables = words[1], _variables(words)
        assert target in targets, where
        assert set(variables) <= exported, where
        context_file = variables.get("CONTEXT_FILE")
        assert context_file is None or (ROOT / context_file).is_file(), where
        args = shlex.split(variables.get("ARGS", ""))
        if target == "cdk":
            assert args[:1] and args[0] in CDK_COMMANDS, where
            args = args[1:]
        settings = [a for i, a in enumerate(args) if a == "-c" or (i and args[i - 1] == "-c")]
        flags = [a for a in args if a.startswith("--") and a not in settings]
        if target in TOOL_OF:
            assert all(f'"{f}"' in TOOL_OF[target].read_text() for f in flags), where
        elif target != "cdk":
            assert flags == [], where
        if "<" in " ".join(args) or target not in (
            "synth",
            "cdk",
            "check",
            "review",
            "accept",
            "manifests",
            "test",
            "security-report",
        ):
            continue
        from tooling.make_args import arguments

        flagged = [a for a in arguments(["SET"], variables) if a] + settings
        assert stop_reason(str(ROOT / context_file) if context_file else None, flagged, fresh) is None, where
    assert len(commands) >= 40  # (45 when written)
