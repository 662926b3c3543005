"""The example GitHub Actions workflows (docs/delivery.md): the CI (.github/workflows/ci.yml: the README's commands,
the review as one pull-request comment, a failing check on a blocked review) and the deploy (deploy.yml: one job per
environment, OIDC credentials, the live review before `cdk deploy`). Parsed and held to what the docs say; the
review's shell steps and comment script are run here (bash with a stand-in `make`; Node with a stand-in GitHub API)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from constructs_lib.karpenter import yaml_load
from tests.conftest import ROOT
from tooling import deploy_matrix

WORKFLOWS = ROOT / ".github" / "workflows"
CACHE_KEY = (
    "deps-${{ runner.os }}-py3.11-${{ hashFiles('requirements.txt', 'requirements-dev.txt', "
    "'requirements-checkov.txt', 'package-lock.json') }}"
)
MARKER = "<!-- eks-karpenter:make-review -->"


def _workflow(name: str) -> dict[str, Any]:
    return yaml_load.safe_load((WORKFLOWS / name).read_text())


def _step(job: dict[str, Any], predicate) -> dict[str, Any]:
    (step,) = [s for s in job["steps"] if predicate(s)]
    return step


def _uses(action: str):
    return lambda s: s.get("uses", "").startswith(f"{action}@")


def test_ci_example_runs_the_readme_commands_and_keeps_the_reports():
    workflow = _workflow("ci.yml")
    assert "pull_request" in workflow[True] and workflow[True]["push"] == {"branches": ["main"]}  # `on` reads as True
    check = workflow["jobs"]["check"]
    runs = [s["run"].strip().splitlines()[0] for s in check["steps"] if "run" in s]
    assert runs == [
        "make synth",
        "make test",
        "status=0",
        'make security-report ARGS="--sarif-dir reports" | tee security-report.txt',
    ]
    checkout = _step(check, _uses("actions/checkout"))
    assert checkout["with"] == {"persist-credentials": False, "fetch-depth": 0}  # the review reads the base's baseline
    upload = _step(check, lambda s: _uses("actions/upload-artifact")(s) and s["with"]["name"] != "review")
    assert upload["if"] == "always()"
    assert upload["with"]["path"].split() == ["cdk.out/", "security-report.txt", "review.md", "reports/"]
    sarif = _step(check, _uses("github/codeql-action/upload-sarif"))
    assert (sarif["if"], sarif["with"]) == ("always()", {"sarif_file": "reports"})
    # the README names the two commands; docs/delivery.md, which documents the CI example, every command it runs
    readme = (ROOT / "README.md").read_text()
    assert all(f"`{command}`" in readme for command in ("make synth", "make test"))
    delivery = (ROOT / "docs" / "delivery.md").read_text()
    review = _step(check, lambda s: s.get("id") == "review")
    for command in [*runs[:2], runs[3].split(" |")[0], review["run"].splitlines()[1].split(" ||")[0]]:
        assert command in delivery, command


def test_ci_reviews_a_pull_request_whenever_its_synth_worked_and_hands_the_verdict_to_the_review_job():
    check = _workflow("ci.yml")["jobs"]["check"]
    review = _step(check, lambda s: s.get("id") == "review")
    # after make test even when it failed (a stale baseline), so that the comment never describes an older push
    assert (
        review["if"] == "${{ !cancelled() && github.event_name == 'pull_request' && steps.synth.outcome == 'success' }}"
    )
    assert _step(check, lambda s: s.get("run") == "make synth")["id"] == "synth"
    assert review["env"] == {"BASE_REF": "${{ github.base_ref }}"}  # never expanded into the script itself
    assert check["outputs"]["review"] == "${{ steps.review.outputs.status }}"
    upload = _step(check, lambda s: _uses("actions/upload-artifact")(s) and s["with"]["name"] == "review")
    assert (upload["if"], upload["with"]["path"]) == (
        "${{ !cancelled() && steps.review.outcome == 'success' }}",
        "review.md",
    )
    order = [s.get("id") or s.get("run", s.get("uses", "")) for s in check["steps"]]
    assert order.index("synth") < order.index("make test") < order.index("review")


def test_the_review_job_alone_may_write_to_the_pull_request_and_fails_after_the_comment():
    workflow = _workflow("ci.yml")
    assert workflow["permissions"] == {"contents": "read"}
    jobs = workflow["jobs"]
    assert jobs["check"]["permissions"] == {"contents": "read", "security-events": "write"}
    review = jobs["review"]
    assert review["permissions"] == {"pull-requests": "write"}  # no contents: it checks out nothing
    assert (review["needs"], review["if"]) == ("check", "${{ !cancelled() && needs.check.outputs.review != '' }}")
    steps = review["steps"]
    assert [s.get("uses", "").split("@")[0] or s["name"] for s in steps] == [
        "actions/download-artifact",
        "actions/github-script",
        "Fail on a blocked review (after the comment)",
    ]
    assert steps[0]["with"] == {"name": "review"}
    assert MARKER in steps[1]["with"]["script"]
    assert steps[1]["env"] == steps[2]["env"] == {"REVIEW_STATUS": "${{ needs.check.outputs.review }}"}
    assert "if" not in steps[2]  # fails the check whatever the comment did


@pytest.mark.parametrize("name", ["ci.yml", "deploy.yml"])
def test_workflows_pin_actions_by_commit_and_cache_by_lock_file_hash(name):
    text = (WORKFLOWS / name).read_text()
    workflow = yaml_load.safe_load(text)
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses and all(re.fullmatch(r"[a-z-]+/[a-z-]+(/[a-z-]+)?@[0-9a-f]{40}", u) for u in uses), uses
    # each pin names the tag it was taken from, for reviewers and for dependency bots
    assert all(re.search(rf"uses: {re.escape(u)} # v[0-9]+\.[0-9]+\.[0-9]+$", text, re.M) for u in uses)
    # one commit per action across the workflows
    pins: dict[str, set[str]] = {}
    for w in ("ci.yml", "deploy.yml"):
        for u in re.findall(r"uses: ([^\s]+)", (WORKFLOWS / w).read_text()):
            pins.setdefault(u.split("@")[0], set()).add(u.split("@")[1])
    assert all(len(commits) == 1 for commits in pins.values()), pins
    for cache in [s for s in steps if s.get("uses", "").startswith("actions/cache@")]:
        assert cache["with"]["path"].split() == [".venv", ".venv-checkov", "node_modules", ".mypy_cache"]
        assert cache["with"]["key"] == CACHE_KEY
    # what a run script holds is its own: values reach it through env, never ${{ }} pasted into the shell
    assert not [s["run"] for s in steps if "${{" in s.get("run", "")]


# -- the review's steps, run


def _bash(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True
    )


@pytest.mark.parametrize(("status", "writes"), [(0, True), (1, True), (2, False)])
def test_the_review_step_records_the_exit_status_and_always_leaves_a_review_to_post(tmp_path, status, writes):
    """`make review` stands in as a script: its exit status goes to the step's output, not to the step (the review
    job fails on it, after the comment); when it stops before writing the review, the comment says so."""
    review = _step(_workflow("ci.yml")["jobs"]["check"], lambda s: s.get("id") == "review")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    make = bin_dir / "make"
    body = 'echo "# Review: make $*" > review.md; ' if writes else ""
    make.write_text(f"#!/bin/bash\n{body}exit {status}\n")
    make.chmod(0o755)
    output, summary = tmp_path / "output", tmp_path / "summary"
    done = _bash(
        review["run"],
        tmp_path,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        BASE_REF="main",
        GITHUB_OUTPUT=str(output),
        GITHUB_STEP_SUMMARY=str(summary),
    )
    assert done.returncode == 0, done.stderr
    assert output.read_text() == f"status={status}\n"
    expected = (
        "# Review: make review BASE=origin/main ARGS=--output review.md\n"
        if writes
        else "# Review\n\n`make review` stopped (exit 2) before reviewing this change: see the log of the check job.\n"
    )
    assert (tmp_path / "review.md").read_text() == summary.read_text() == expected


@pytest.mark.parametrize(("status", "code"), [("0", 0), ("1", 1), ("2", 1)])
def test_the_review_check_fails_on_a_blocked_review(tmp_path, status, code):
    step = _workflow("ci.yml")["jobs"]["review"]["steps"][2]
    done = _bash(step["run"], tmp_path, REVIEW_STATUS=status)
    assert done.returncode == code
    if code:
        assert done.stdout == (
            f"::error::make review exited {status}: the change is blocked, or could not be reviewed (the comment "
            "says why)\n"
        )


# The comment script, run by Node (the project's, node_modules/.bin) with what actions/github-script hands it
# (github, context, core, require) standing in: the GitHub API as an in-memory list of comments.
HARNESS = r"""
const fs = require('fs');
const [script, statePath] = process.argv.slice(2);
const state = JSON.parse(fs.readFileSync(statePath, 'utf8'));
const warnings = [];
const calls = [];
const denied = () => Object.assign(new Error('Resource not accessible by integration'), { status: state.denied });
const github = {
  paginate: async (method, params) => (await method(params)).data,
  rest: { issues: {
    listComments: async (p) => {
      if (state.denied) throw denied();
      calls.push(['list', p.issue_number]);
      return { data: state.comments };
    },
    createComment: async (p) => {
      calls.push(['create', p.issue_number]);
      state.comments.push({ id: 100 + state.comments.length, user: { type: 'Bot' }, body: p.body });
    },
    updateComment: async (p) => {
      calls.push(['update', p.comment_id]);
      state.comments.find((c) => c.id === p.comment_id).body = p.body;
    },
  } },
};
const context = {
  repo: { owner: 'org', repo: 'clusters' },
  payload: { pull_request: { number: 7, head: { sha: state.sha }, base: { ref: 'main' } } },
};
const core = { warning: (m) => warnings.push(m) };
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor;
new AsyncFunction('require', 'github', 'context', 'core', fs.readFileSync(script, 'utf8'))(require, github, context, core)
  .then(() => console.log(JSON.stringify({ comments: state.comments, calls, warnings })))
  .catch((e) => { console.error(`threw: ${e.message}`); process.exit(1); });
"""


def _post(tmp_path: Path, review: str, comments: list[dict[str, Any]], sha: str, denied: int = 0) -> dict[str, Any]:
    script = _step(_workflow("ci.yml")["jobs"]["review"], _uses("actions/github-script"))["with"]["script"]
    (tmp_path / "script.js").write_text(script)
    (tmp_path / "harness.js").write_text(HARNESS)
    (tmp_path / "review.md").write_text(review)
    (tmp_path / "state.json").write_text(json.dumps({"comments": comments, "sha": sha, "denied": denied}))
    node = shutil.which("node", path=str(ROOT / "node_modules" / ".bin"))
    assert node is not None
    done = subprocess.run(
        [node, "harness.js", "script.js", "state.json"],
        cwd=tmp_path,
        env={**os.environ, "REVIEW_STATUS": "1"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_review_is_one_comment_updated_on_every_push_not_a_new_one(tmp_path):
    theirs = {"id": 1, "user": {"type": "User"}, "body": f"quoting the bot: {MARKER}"}  # a person's: never edited
    first = _post(tmp_path, "# Review\n\nfirst push\n", [theirs], sha="aaa")
    assert first["calls"] == [["list", 7], ["create", 7]]
    ours = first["comments"][1]
    assert ours["body"] == (
        f"{MARKER}\n# Review\n\nfirst push\n\n---\n`make review` of aaa against the baseline of `main` (exit 1); this "
        "comment is updated on every push.\n"
    )
    second = _post(tmp_path, "# Review\n\nsecond push\n", first["comments"], sha="bbb")
    assert second["calls"] == [["list", 7], ["update", 101]]
    assert [c["body"] for c in second["comments"]] == [
        theirs["body"],
        ours["body"].replace("first", "second").replace("aaa", "bbb"),
    ]
    assert second["warnings"] == []


def test_a_review_too_long_for_a_comment_is_cut_and_a_fork_without_write_access_only_warns(tmp_path):
    long = _post(tmp_path, "x" * 70_000, [], sha="ccc")
    (comment,) = long["comments"]
    assert len(comment["body"]) < 65_536
    assert (
        "x" * 60_000 + "\n\n(cut here: the whole review is the check job's summary and its `review` artifact)\n"
        in (comment["body"])
    )
    fork = _post(tmp_path, "# Review\n", [], sha="ddd", denied=403)
    assert (fork["comments"], fork["calls"]) == ([], [])
    assert fork["warnings"] == [
        "no comment (Resource not accessible by integration): the review is the summary of the check job"
    ]
    script = _step(_workflow("ci.yml")["jobs"]["review"], _uses("actions/github-script"))["with"]["script"]
    assert "if (error.status !== 403) throw error;" in script  # any other error fails the step


# -- the deploy example


def test_the_deploy_example_is_inert_until_enabled_and_runs_one_job_per_environment_in_order():
    workflow = _workflow("deploy.yml")
    assert workflow[True] == {"push": {"branches": ["main"]}, "workflow_dispatch": None}
    assert workflow["permissions"] == {"contents": "read"}
    plan, deploy = workflow["jobs"]["plan"], workflow["jobs"]["deploy"]
    assert plan["if"] == "${{ vars.DEPLOY_ENABLED == 'true' }}"  # a fork, or a repository not set up, runs nothing
    assert plan["permissions"] == {"contents": "read"}
    assert [s["run"] for s in plan["steps"] if "run" in s] == [
        "make synth",
        '.venv/bin/python -m tooling.deploy_matrix >> "$GITHUB_OUTPUT"',
    ]
    assert plan["outputs"] == {"matrix": "${{ steps.environments.outputs.matrix }}"}
    assert deploy["needs"] == "plan"
    assert deploy["strategy"] == {
        "matrix": "${{ fromJSON(needs.plan.outputs.matrix) }}",
        "max-parallel": 1,
        "fail-fast": True,
    }
    assert deploy["environment"] == "${{ matrix.environment }}"
    assert deploy["concurrency"] == {"group": "deploy-${{ matrix.stack }}", "cancel-in-progress": False}


def test_each_deploy_job_gets_oidc_credentials_and_reviews_its_stack_live_before_deploying_it_alone():
    deploy = _workflow("deploy.yml")["jobs"]["deploy"]
    assert deploy["permissions"] == {"contents": "read", "id-token": "write"}
    steps = deploy["steps"]
    credentials = _step(deploy, _uses("aws-actions/configure-aws-credentials"))
    assert credentials["with"] == {
        "role-to-assume": "${{ vars.AWS_DEPLOY_ROLE_ARN }}",
        "role-session-name": "deploy-${{ matrix.stack }}",
        "aws-region": "${{ matrix.region || vars.AWS_REGION }}",
        "role-duration-seconds": 10800,
    }
    assert not any(k.startswith("aws-") and "secret" in k for k in credentials["with"])  # no stored keys
    review = _step(deploy, lambda s: s.get("name") == "Review against the deployed stack")
    cdk = _step(deploy, lambda s: s.get("name") == "Deploy this environment's stack")
    assert review["run"] == 'make review LIVE=1 ARGS="--lookup-role --stack $STACK --output review.md"'
    assert cdk["run"] == 'make cdk ARGS="deploy $STACK --exclusively --require-approval never"'
    assert review["env"] == cdk["env"] == {"STACK": "${{ matrix.stack }}"}
    assert "if" not in review and "if" not in cdk  # a failed review skips the deploy
    assert steps.index(credentials) < steps.index(review) < steps.index(cdk)
    # the other workflows' jobs never get an OIDC token
    ci = _workflow("ci.yml")["jobs"]
    assert not [name for name, job in ci.items() if "id-token" in job["permissions"]]
    delivery = (ROOT / "docs" / "delivery.md").read_text()
    for command in (review["run"], cdk["run"], "DEPLOY_ENABLED", "AWS_DEPLOY_ROLE_ARN", "AWS_REGION"):
        assert command in delivery, command


def _project(tmp_path: Path, context: dict[str, Any]) -> Path:
    (tmp_path / "cdk.json").write_text(json.dumps({"app": "python3 app.py", "context": context}))
    (tmp_path / "cdk.context.json").write_text("{}")
    return tmp_path


def test_the_deploy_jobs_are_the_environments_of_cdk_json_in_its_order(tmp_path, capsys):
    environments = {
        "staging": {"clusterName": "payments_staging", "region": "eu-west-1"},
        "prod": {"region": "us-east-1"},
    }
    project = _project(tmp_path, {"clusterName": "payments", "environments": environments})
    assert deploy_matrix.main(project) == 0
    out = capsys.readouterr().out
    assert out == (
        'matrix={"include":[{"environment":"staging","stack":"payments-staging","region":"eu-west-1"},'
        '{"environment":"prod","stack":"payments-prod","region":"us-east-1"}]}\n'
    )
    # without environments: one job, in the GitHub environment named after the stack; the region from AWS_REGION
    assert deploy_matrix.main(_project(tmp_path, {"clusterName": "payments"})) == 0
    assert capsys.readouterr().out == 'matrix={"include":[{"environment":"payments","stack":"payments","region":""}]}\n'


def test_the_deploy_jobs_refuse_a_configuration_the_pipeline_delivers_or_an_invalid_one(tmp_path, capsys):
    pipeline = json.loads((ROOT / "examples" / "pipeline.json").read_text())
    assert deploy_matrix.main(_project(tmp_path, pipeline)) == 2
    assert capsys.readouterr() == ("", deploy_matrix.PIPELINE + "\n")
    assert deploy_matrix.main(_project(tmp_path, {"clusterNmae": "x"})) == 2
    assert capsys.readouterr().err == (
        "Configuration error:\nclusterNmae: unknown setting; did you mean 'clusterName'? (from cdk.json)\n"
    )
