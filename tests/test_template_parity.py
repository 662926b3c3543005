"""The Karpenter template's policies, seen by the gate: structured in the synth (cdk-nag, checkov and cfn-lint read
every statement) and held to upstream's template of the release (constructs_lib.karpenter.template_parity; make template-diff)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from constructs_lib.karpenter import yaml_load
from constructs_lib.karpenter.iam_grants import Grant, covers, grants, structured_document, wildcard_acknowledgments
from constructs_lib.karpenter.infra import CONTROLLER_POLICIES
from constructs_lib.karpenter.template_parity import (
    CONTROLLER,
    load_template,
    narrowings,
    template_grants,
    upstream_template,
    widening_problems,
    widenings,
)
from karpenter_stack import versions
from tooling.releases import template_parity

TEMPLATE = versions.karpenter_template("1.14.1")


def _fork(tmp_path: Path, policy: str, edit) -> Path:
    """A copy of templates/ whose one policy (a !Sub JSON string) is changed by ``edit`` (a function of the document)."""
    root = tmp_path / "templates"
    shutil.copytree(TEMPLATE.parent, root)
    path = root / TEMPLATE.name
    text = path.read_text()
    document = load_template(path)["Resources"][policy]["Properties"]["PolicyDocument"]["Fn::Sub"]
    edited = json.loads(document)
    edit(edited)
    # the !Sub string is a literal block in the template: replace it as a whole, indented as YAML wants
    indented = "\n".join("        " + line for line in json.dumps(edited, indent=2).splitlines())
    original = "\n".join("        " + line for line in document.rstrip("\n").splitlines())
    assert original in text
    path.write_text(text.replace(original, indented))
    return path


def _statement(sid: str, action, resource, condition=None) -> dict:
    found = {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}
    return found | ({"Condition": condition} if condition else {})


def test_the_shipped_template_grants_exactly_what_upstreams_does():
    project, upstream = load_template(TEMPLATE), load_template(upstream_template(TEMPLATE))
    assert widenings(project, upstream) == [] and narrowings(project, upstream) == []
    counts = {principal: len(found) for principal, found in template_grants(project).items()}
    assert counts == {
        "the controller's managed policies": 69,
        "role KarpenterNodeRole-${ClusterName}": 5,
        "AWS::SQS::QueuePolicy KarpenterInterruptionQueuePolicy": 3,
    }
    assert widening_problems(TEMPLATE) == ()


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (  # a statement on everything
            lambda d: d["Statement"].append(_statement("Everything", "*", "*")),
            "KarpenterControllerNodeLifecyclePolicy statement 'Everything': Allow * on *",
        ),
        (  # a new action in an existing, scoped statement
            lambda d: d["Statement"][-1]["Action"].append("ec2:DeleteVolume"),
            "statement 'DeleteClusterInstancesAndLaunchTemplates': Allow ec2:DeleteVolume on arn:${AWS::Partition}:ec2",
        ),
        (  # a widened resource
            lambda d: d["Statement"][0].update(Resource="*"),
            "statement 'LaunchFromSharedResources': Allow ec2:RunInstances on *;",
        ),
        (  # a dropped condition: the cluster's tag no longer required to terminate
            lambda d: d["Statement"][-1].pop("Condition"),
            "statement 'DeleteClusterInstancesAndLaunchTemplates': Allow ec2:TerminateInstances on",
        ),
    ],
    ids=["wildcard", "new-action", "wider-resource", "dropped-condition"],
)
def test_a_fork_that_widens_a_controller_policy_is_refused_naming_policy_and_statement(tmp_path, edit, named):
    path = _fork(tmp_path, "KarpenterControllerNodeLifecyclePolicy", edit)
    problems = widening_problems(path)
    (problem,) = problems  # one line, however many grants
    assert problem.startswith("templates/karpenter-1.14.1.yaml grants more than upstream's template of the release: ")
    assert named in problem, problem
    assert problem.endswith(
        "(acknowledge each grant with a reason under widenings: in templates/changes/karpenter-1.14.1.yaml, naming its "
        "principal, policy, sid, action and resource, or remove it)"
    )
    # the diff command says the same and fails
    lines, failures = template_parity.report(path)
    assert any(line.startswith("  + KarpenterControllerNodeLifecyclePolicy statement") for line in lines)
    assert any(line.endswith("(to the controller's managed policies)") for line in lines if line.startswith("  + "))
    assert any("not acknowledged" in f for f in failures)


def test_a_widening_acknowledged_with_a_reason_passes_and_the_diff_shows_the_reason(tmp_path):
    path = _fork(
        tmp_path,
        "KarpenterControllerNodeLifecyclePolicy",
        lambda d: d["Statement"][-1]["Action"].append("ec2:DeleteVolume"),
    )
    changes = path.parent / "changes" / path.name
    loaded = yaml_load.safe_load(changes.read_text())
    reason = "Our volumes outlive their instances; the cluster tag condition still applies."
    loaded["widenings"] = [
        {
            "principal": CONTROLLER,
            "policy": "KarpenterControllerNodeLifecyclePolicy",
            "sid": "DeleteClusterInstancesAndLaunchTemplates",
            "action": "ec2:DeleteVolume",
            "resource": resource,
            "why": reason,
        }
        for resource in (
            "arn:${AWS::Partition}:ec2:${AWS::Region}:*:instance/*",
            "arn:${AWS::Partition}:ec2:${AWS::Region}:*:launch-template/*",
        )
    ]
    changes.write_text(yaml.safe_dump(loaded))
    assert widening_problems(path) == ()
    lines, failures = template_parity.report(path)
    assert failures == [] and lines.count(f"      why: {reason}") == 2
    assert "Wider than upstream's: 2" in lines


def test_covers_is_about_actions_resources_and_conditions():
    def grant(action="ec2:RunInstances", resource="arn:x:instance/*", conditions=frozenset(), effect="Allow"):
        return Grant("P", "S", effect, action, resource, conditions)

    tag = ("StringEquals", "aws:ResourceTag/owner", frozenset({"me"}))
    assert covers(grant(action="ec2:*"), grant())
    assert covers(grant(action="EC2:runinstances"), grant())  # actions compare case-insensitively
    assert not covers(grant(), grant(action="ec2:*"))  # a wildcard is covered only by a wildcard as wide
    assert covers(grant(resource="*"), grant())
    assert not covers(grant(), grant(resource="*"))
    assert covers(
        grant(conditions=frozenset({tag})), grant(conditions=frozenset({tag, ("Bool", "x", frozenset({"true"}))}))
    )
    assert not covers(grant(conditions=frozenset({tag})), grant())  # a dropped condition
    wider_values = ("StringEquals", "aws:resourcetag/OWNER", frozenset({"me", "you"}))
    assert not covers(grant(conditions=frozenset({tag})), grant(conditions=frozenset({wider_values})))
    assert not covers(grant(effect="Deny"), grant())


def test_the_importer_structures_each_policy_with_the_same_intrinsics():
    text = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "eks:DescribeCluster",
                    "Resource": "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${ClusterName}",
                    "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned"}},
                }
            ],
        }
    )
    assert structured_document(text, "payments")["Statement"] == [
        {
            "Effect": "Allow",
            "Action": "eks:DescribeCluster",
            "Resource": {
                "Fn::Sub": "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${ClusterName}"
            },
            "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/payments": "owned"}},
        }
    ]
    # written back, the structured document makes the same grants as the string
    assert list(grants("P", structured_document(text, "payments"), "payments")) == list(grants("P", {"Fn::Sub": text}))


def test_every_controller_policy_is_structured_in_the_synth_and_makes_the_templates_grants(default):
    nested = default.karpenter_json
    template = load_template(TEMPLATE)
    seen = 0
    for logical_id in CONTROLLER_POLICIES:
        document = nested["Resources"][logical_id]["Properties"]["PolicyDocument"]
        assert set(document) == {"Version", "Statement"}  # structured: no Fn::Sub string left
        source = template["Resources"][logical_id]["Properties"]["PolicyDocument"]
        assert list(grants(logical_id, document, "eks-karpenter")) == list(grants(logical_id, source))
        seen += len(document["Statement"])
    assert seen == 18  # every statement of the six policies, now visible to cdk-nag, checkov and cfn-lint


def test_every_wildcard_acknowledgment_says_what_its_statements_hold(default):
    """Each AwsSolutions-IAM5 acknowledgment on a controller policy names exactly the statements (Sid, actions) of the
    synthesized policy that hold that wildcard, and whether conditions bound them."""
    nested = default.karpenter_json
    template = load_template(TEMPLATE)
    checked = 0
    for logical_id in CONTROLLER_POLICIES:
        text = template["Resources"][logical_id]["Properties"]["PolicyDocument"]["Fn::Sub"]
        for finding, reason in wildcard_acknowledgments(logical_id, text, TEMPLATE.name).items():
            wildcard = finding.removeprefix("AwsSolutions-IAM5[Resource::").removesuffix("]")
            statements = [
                s
                for s in nested["Resources"][logical_id]["Properties"]["PolicyDocument"]["Statement"]
                if wildcard
                in {_nag_form(r) for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])}
            ]
            assert statements, finding
            for statement in statements:
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                assert f"{statement['Sid']}: {', '.join(actions)} " in reason
                assert ("when " in reason.split(statement["Sid"])[1].split(";")[0]) == ("Condition" in statement)
            checked += 1
    assert checked == 17


def _nag_form(resource) -> str:
    """A synthesized Resource as cdk-nag writes it in a finding id."""
    text = resource["Fn::Sub"] if isinstance(resource, dict) else resource
    return text.replace("${", "<").replace("}", ">")


def test_template_diff_prints_every_difference_with_its_reason(capsys):
    assert template_parity.main([]) == 0
    out = capsys.readouterr().out
    assert "  the controller's managed policies: 69 / 69" in out
    assert "Wider than upstream's: none" in out and "Narrower than upstream's: none" in out
    assert "Other differences: 25" in out and "NO REASON GIVEN" not in out
    assert "  Resources.KarpenterControllerNodeLifecyclePolicy: logical id NodeLifecyclePolicy renamed" in out


def test_a_stale_reason_fails_the_diff(tmp_path):
    root = tmp_path / "templates"
    shutil.copytree(TEMPLATE.parent, root)
    changes = root / "changes" / TEMPLATE.name
    loaded = yaml_load.safe_load(changes.read_text())
    loaded["changes"]["Resources.KarpenterNodeRole.Properties.Path"] = "We never wrote it."
    changes.write_text(yaml.safe_dump(loaded))
    _, failures = template_parity.report(root / TEMPLATE.name)
    assert failures == [
        "templates/changes/karpenter-1.14.1.yaml: 'Resources.KarpenterNodeRole.Properties.Path' matches no difference "
        "any more; remove it"
    ]


def test_upstreams_template_is_kept_unmodified():
    """templates/upstream/ holds upstream's file byte for byte: its grants are what the shipped template is held to
    (a change to it would move every verdict), so its content is pinned."""
    import hashlib

    digest = hashlib.sha256(upstream_template(TEMPLATE).read_bytes()).hexdigest()
    assert digest == UPSTREAM_1_14_1_SHA256
    # 1.13.1's getting-started template is the same file (upstream changed the CRDs and the chart, not it)
    assert hashlib.sha256(upstream_template(versions.karpenter_template("1.13.1")).read_bytes()).hexdigest() == digest


UPSTREAM_1_14_1_SHA256 = "7ffeb01f04b5da482ef43087830de00a476098416e3b4576c38239ef1b0bef4b"


def test_the_docs_state_the_grant_counts_the_diff_computes():
    counts = {p: len(g) for p, g in template_grants(load_template(TEMPLATE)).items()}
    readme = (Path(__file__).resolve().parent.parent / "docs" / "development.md").read_text()  # (the forking section)
    stated = (
        f"| grants | none: the same {sum(counts.values())} grants ({counts[CONTROLLER]} for the controller, "
        f"{counts['role KarpenterNodeRole-${ClusterName}']} for the node role, "
        f"{counts['AWS::SQS::QueuePolicy KarpenterInterruptionQueuePolicy']} in the queue policy), compared one by one |"
    )
    assert stated in readme
    assert widenings(load_template(TEMPLATE), load_template(upstream_template(TEMPLATE))) == []  # "none" holds


def test_the_synth_refuses_a_widened_fork_in_one_line_and_builds_nothing(tmp_path, monkeypatch):
    from karpenter_stack.application import build, new_app
    from karpenter_stack.config import ConfigError
    from tests.conftest import TODAY
    from tooling.configurations import PRODUCT_CONTEXT

    path = _fork(
        tmp_path, "KarpenterControllerInterruptionPolicy", lambda d: d["Statement"][0]["Action"].append("sqs:*")
    )
    monkeypatch.setattr(versions, "TEMPLATES_DIR", path.parent)
    monkeypatch.setattr(versions.karpenter_template, "__defaults__", (path.parent,))
    monkeypatch.setattr(versions.available_karpenter_versions, "__defaults__", (path.parent,))
    out = tmp_path / "out"
    app = new_app(context=dict(PRODUCT_CONTEXT), outdir=str(out))
    with pytest.raises(ConfigError) as info:
        build(app, today=TODAY)
    assert str(info.value) == (
        "templates/karpenter-1.14.1.yaml grants more than upstream's template of the release: the controller's managed "
        "policies: KarpenterControllerInterruptionPolicy statement 'ConsumeInterruptionQueue': Allow sqs:* on "
        "${KarpenterInterruptionQueue.Arn} (acknowledge each grant with a reason under widenings: in "
        "templates/changes/karpenter-1.14.1.yaml, naming its principal, policy, sid, action and resource, or remove it)"
    )
    assert app.node.children == [] and list(out.iterdir()) == []


def test_a_dropped_deny_is_a_widening_and_a_narrower_deny_too():
    from constructs_lib.karpenter.iam_grants import uncovered

    deny = Grant("P", "NoTls", "Deny", "sqs:*", "*", frozenset({("Bool", "aws:SecureTransport", frozenset({"false"}))}))
    assert uncovered([], [deny]) == [deny]  # the project's template drops upstream's Deny
    assert uncovered([deny], [deny]) == []
    narrower = Grant("P", "NoTls", "Deny", "sqs:SendMessage", "*", deny.conditions)
    assert uncovered([narrower], [deny]) == [deny]  # denies less than upstream's


def test_a_malformed_or_stale_widening_acknowledgment_is_refused_in_one_line(tmp_path):
    root = tmp_path / "templates"
    shutil.copytree(TEMPLATE.parent, root)
    changes = root / "changes" / TEMPLATE.name
    loaded = yaml_load.safe_load(changes.read_text())
    grant = {
        "principal": CONTROLLER,
        "policy": "KarpenterControllerInterruptionPolicy",
        "sid": "ConsumeInterruptionQueue",
        "action": "sqs:*",
    }
    loaded["widenings"] = [
        {**grant, "resource": "*"},  # no why
        {**grant, "resource": "*", "why": "short"},
        {**grant, "resource": "*", "why": "Approved in advance, for a grant nobody made yet."},
    ]
    changes.write_text(yaml.safe_dump(loaded))
    widening_problems.cache_clear()
    assert widening_problems(root / TEMPLATE.name) == (
        "templates/changes/karpenter-1.14.1.yaml: widenings[0] has ['action', 'policy', 'principal', 'resource', 'sid']: "
        "each needs exactly principal, policy, sid, action, resource, why",
        "templates/changes/karpenter-1.14.1.yaml: widenings[1].why: a reason a reviewer can check, at least 20 "
        "characters",
        "templates/changes/karpenter-1.14.1.yaml: widenings acknowledges sqs:* on * (the controller's managed policies: "
        "KarpenterControllerInterruptionPolicy statement 'ConsumeInterruptionQueue'), which the template does not grant "
        "beyond upstream's; remove it",
    )
    _, failures = template_parity.report(root / TEMPLATE.name)
    assert len(failures) == 3
