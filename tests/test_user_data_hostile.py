"""User data as a red team writes it: each input ends as Karpenter 1.14 would end it (constructs_lib/karpenter/specs/user_data.py,
user_data_shell.py, bottlerocket_settings.py, user_data_merged.py), and the valid neighbours stay accepted."""

from __future__ import annotations

import pytest

from constructs_lib.karpenter.specs import rules, user_data, user_data_merged
from constructs_lib.karpenter.specs.node_class import NodeClassSpec
from constructs_lib.karpenter.specs.node_pool import NodePoolSpec
from karpenter_stack.config import ConfigError, load_config
from tests.conftest import TODAY
from tooling.configurations import PRODUCT_CONTEXT

MIME = 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'
NODE_CONFIG = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n"
# The EKS User Guide's example ("Amazon EC2 user data" of launch templates), as printed there.
EKS_GUIDE = (
    'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="==MYBOUNDARY=="\n\n--==MYBOUNDARY==\n'
    'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\necho "Running custom user data script"\n\n'
    "--==MYBOUNDARY==--\\\n"
).replace("--\\\n", "--\n")

OWNED_MAX_PODS = (
    "is set by Karpenter from the node class's kubelet.maxPods (it computes each node's capacity from it); set "
    "kubelet.maxPods instead"
)
OWNED_LABELS = "is set by Karpenter from the pool's labels, which wins; set it there"

REFUSED = {
    # MIME as Go's reader reads it
    "leading blank line before the headers": (
        "al2023",
        "\n" + MIME + "--//\nContent-Type: text/x-shellscript\n\necho hi\n\n--//--\n",
        "user data has 1 blank character(s) before its first MIME header: Karpenter takes it as MIME by its trimmed "
        "text but reads the headers from the first line, where there are none (mime: no media type); start the user "
        "data with 'MIME-Version:' or 'Content-Type:'",
    ),
    "lower-case MIME headers": (
        "al2023",
        MIME.lower() + "--//\ncontent-type: text/x-shellscript\n\necho hi\n\n--//--\n",
        "user data starts with 'mime-version:': Karpenter takes user data as MIME only when it starts with "
        "'MIME-Version:' or 'Content-Type:' written so, and would run this one as a shell script",
    ),
    "unquoted boundary with special characters": (
        "al2",
        MIME.replace('"//"', "//") + "--//\nContent-Type: text/x-shellscript\n\necho hi\n\n--//--\n",
        "user data starts with a MIME header, and Karpenter's MIME reader refuses it: mime: invalid media parameter",
    ),
    "a part without headers": (
        "al2023",
        MIME + "--//\n#!/bin/bash\necho hi\n\n--//--\n",
        "user data starts with a MIME header, and Karpenter's MIME reader refuses it: parsing content, malformed MIME "
        "header: missing colon: '#!/bin/bash'",
    ),
    "a malformed part header": (
        "al2023",
        MIME + "--//\nContent/Type: text/x-shellscript\n\necho hi\n\n--//--\n",
        "user data starts with a MIME header, and Karpenter's MIME reader refuses it: parsing content, malformed MIME "
        "header line: Content/Type: text/x-shellscript",
    ),
    # NodeConfig documents anywhere
    "a NodeConfig followed by ---": (
        "al2023",
        NODE_CONFIG + "  kubelet:\n    config:\n      maxPods: 500\n---\n",
        f"user data part 1, document 1: NodeConfig spec.kubelet.config.maxPods {OWNED_MAX_PODS}",
    ),
    "a NodeConfig as the second document of a part": (
        "al2023",
        MIME
        + "--//\nContent-Type: application/node.eks.aws\n\n"
        + NODE_CONFIG
        + "  kubelet:\n    config:\n      registryPullQPS: 5\n---\n"
        + NODE_CONFIG
        + "  cluster:\n    name: other\n\n--//--\n",
        "user data part 1, document 2: NodeConfig spec.cluster.name is written by Karpenter from the cluster, and "
        "Karpenter's value wins; leave it out",
    ),
    "a NodeConfig flag as upstream's test data writes it": (
        "al2023",
        NODE_CONFIG + '  kubelet:\n    flags:\n      - --node-labels "foo=bar"\n',
        f"user data part 1: NodeConfig kubelet flag --node-labels {OWNED_LABELS}",
    ),
    "a NodeConfig flag of a kubelet setting": (
        "al2023",
        NODE_CONFIG + "  kubelet:\n    flags:\n      - --max_pods=500\n",
        f"user data part 1: NodeConfig kubelet flag --max_pods=500 {OWNED_MAX_PODS}",
    ),
    "only comments (a YAML null: Karpenter makes it a NodeConfig)": (
        "al2023",
        "# nothing to do yet\n",
        "user data part 1: a NodeConfig part with no YAML document (Karpenter takes user data whose first YAML "
        "document is empty, e.g. only comments, as a NodeConfig)",
    ),
    # shell flags and commands, in either spelling
    "kubelet flag with = in a shell part": (
        "al2023",
        "#!/bin/bash\necho 'KUBELET_EXTRA_ARGS=--max-pods=500' >> /etc/environment\n",
        f"user data part 1, line 2: kubelet flag --max-pods=500 {OWNED_MAX_PODS}",
    ),
    "kubelet flag with a space in a shell part": (
        "al2",
        "#!/bin/bash\nexport KUBELET_EXTRA_ARGS='--node-labels foo=bar'\n",
        f"user data part 1, line 2: kubelet flag --node-labels {OWNED_LABELS}",
    ),
    "kubelet flag with an underscore": (
        "al2",
        "#!/bin/bash\nexport KUBELET_EXTRA_ARGS=--max_pods=9\n",
        f"user data part 1, line 2: kubelet flag --max_pods=9 {OWNED_MAX_PODS}",
    ),
    "bootstrap.sh behind sudo and a line continuation": (
        "al2",
        "#!/bin/bash\nset -e\nFOO=1 sudo \\\n  /etc/eks/bootstrap.sh my-cluster\n",
        "user data part 1, line 4, runs /etc/eks/bootstrap.sh: Karpenter adds a part that runs it with the cluster's "
        "and the pool's parameters after yours, and a node must join once (for a bootstrap of your own: amiFamily "
        "Custom)",
    ),
    "bootstrap.sh flag": (
        "al2",
        "#!/bin/bash\nARGS=(--kubelet-extra-args '--v=2')\n",
        "user data part 1, line 2: bootstrap.sh flag --kubelet-extra-args is set by Karpenter from the node class's "
        "kubelet settings and the pool's labels and taints, which wins; set it there",
    ),
    "nodeadm init in a shell part": (
        "al2023",
        MIME + "--//\nContent-Type: text/x-shellscript\n\nif true; then nodeadm init -c file:///x; fi\n\n--//--\n",
        "user data part 1, line 1, runs nodeadm init: the node runs it once with Karpenter's NodeConfig part and "
        "yours merged; give your settings in a NodeConfig part instead",
    ),
    # Bottlerocket decoded into Karpenter's types
    "Bottlerocket integer given as a string": (
        "bottlerocket",
        '[settings.kubernetes]\nkube-api-qps = "5"\n',
        "Bottlerocket user data: settings.kubernetes.kube-api-qps is a string ('5'), and Karpenter decodes it as an "
        "integer (bottlerocketsettings.go): the decode fails and no node of the class launches",
    ),
    "Bottlerocket negative log level": (
        "bottlerocket",
        "[settings.kubernetes]\nlog-level = -1\n",
        "Bottlerocket user data: settings.kubernetes.log-level is an integer (-1), and Karpenter decodes it as an "
        "integer from 0 to 4294967295 (bottlerocketsettings.go): the decode fails and no node of the class launches",
    ),
    "Bottlerocket string for an array": (
        "bottlerocket",
        '[settings.kubernetes]\nallowed-unsafe-sysctls = "net.*"\n',
        "Bottlerocket user data: settings.kubernetes.allowed-unsafe-sysctls is a string ('net.*'), and Karpenter "
        "decodes it as an array of strings (bottlerocketsettings.go): the decode fails and no node of the class "
        "launches",
    ),
    "Bottlerocket static pod enabled as a word": (
        "bottlerocket",
        '[settings.kubernetes.static-pods.probe]\nenabled = "yes"\n',
        "Bottlerocket user data: settings.kubernetes.static-pods.probe.enabled is a string ('yes'), and Karpenter "
        "decodes it as true or false (bottlerocketsettings.go): the decode fails and no node of the class launches",
    ),
    "Bottlerocket bootstrap command not a list of lists": (
        "bottlerocket",
        '[settings.bootstrap-commands.setup]\ncommands = ["apiclient", "set"]\nmode = "once"\nessential = true\n',
        "Bottlerocket user data: settings.bootstrap-commands.setup.commands[0] is a string ('apiclient'), and "
        "Karpenter decodes it as an array of strings (bottlerocketsettings.go): the decode fails and no node of the "
        "class launches",
    ),
    "Bottlerocket bootstrap command mode": (
        "bottlerocket",
        '[settings.bootstrap-commands.setup]\ncommands = [["true"]]\nmode = "sometimes"\n',
        "Bottlerocket user data: settings.bootstrap-commands.setup.mode 'sometimes' is not a mode Bottlerocket runs "
        "(always, once, off)",
    ),
    "Bottlerocket settings.kubernetes not a table": (
        "bottlerocket",
        'settings = { kubernetes = "x" }\n',
        "Bottlerocket user data: settings.kubernetes is a string ('x'), and Karpenter decodes it as a table "
        "(bottlerocketsettings.go): the decode fails and no node of the class launches",
    ),
    # Windows: EC2Launch tags inside Karpenter's block
    "Windows persist tag": (
        "windows2022",
        "Write-Host hi\n<persist>true</persist>\n",
        "Windows user data: leave out <persist>; Karpenter writes your commands inside its own <powershell> block, "
        "before its bootstrap call, where EC2Launch reads no tag",
    ),
    "Windows script tag in another case": (
        "windows2025",
        "<SCRIPT>echo hi</SCRIPT>\n",
        "Windows user data: leave out <SCRIPT>; Karpenter writes your commands inside its own <powershell> block, "
        "before its bootstrap call, where EC2Launch reads no tag",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_hostile_user_data_ends_as_karpenter_would_end_it(case: str) -> None:
    family, text, message = REFUSED[case]
    with pytest.raises(ValueError) as info:
        user_data.check(family, text)
    assert str(info.value) == message


ACCEPTED = {
    "the EKS User Guide's example on AL2023": ("al2023", EKS_GUIDE),
    "the EKS User Guide's example on AL2": ("al2", EKS_GUIDE),
    "CRLF line ends": (
        "al2023",
        (MIME + "--//\nContent-Type: text/x-shellscript\n\necho hi\n\n--//--\n").replace("\n", "\r\n"),
    ),
    "a comment that mentions bootstrap.sh": ("al2", "#!/bin/bash\n# AL2 runs /etc/eks/bootstrap.sh after this\n"),
    "a word that names bootstrap.sh": ("al2", "#!/bin/bash\necho /etc/eks/bootstrap.sh is Karpenter's\n"),
    "a hash inside a word": ("al2", "#!/bin/bash\necho a#--max-pods=5\n"),
    "other flags in a shell part": ("al2023", "#!/bin/bash\nyum install -y --setopt=x htop\n"),
    "a multi-document NodeConfig part of others' settings": (
        "al2023",
        NODE_CONFIG + "  kubelet:\n    config:\n      registryPullQPS: 5\n---\n" + NODE_CONFIG + "  instance: {}\n",
    ),
    "Bottlerocket settings Karpenter 1.14 decodes": (
        "bottlerocket",
        '[settings.kubernetes]\nmemory-manager-policy = "Static"\nlog-level = 4\n'
        "[settings.kubernetes.topology-manager-policy-options]\nmax-allowable-numa-nodes = 4\n"
        '[settings.bootstrap-commands.setup]\ncommands = [["apiclient", "set", "x=1"]]\nmode = "once"\n'
        "essential = true\n[settings.host-containers.admin]\nenabled = true\n",
    ),
    "Windows commands": ("windows2022", "Write-Host 'hi <b>'\n"),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_valid_neighbours_are_accepted(case: str) -> None:
    family, text = ACCEPTED[case]
    user_data.check(family, text)


def test_the_size_limit_counts_what_karpenter_adds_for_the_class_alone() -> None:
    text = "#!/bin/bash\n" + "echo 0123456789abcdef\n" * 640  # 14,092 bytes: fits alone, not with Karpenter's part
    with pytest.raises(ValueError) as info:
        NodeClassSpec.model_validate({"name": "big", "userData": text})
    assert (
        "userData: 14092 bytes, and with Karpenter's al2023 part for a pool that adds no label or taint of its own "
        "the user data of a node is 16511 bytes: EC2 takes at most 16384"
    ) in str(info.value)


def _pool(name: str, labels: int) -> NodePoolSpec:
    return NodePoolSpec.model_validate(
        {
            "name": name,
            "nodeClass": "big",
            "labels": {f"team.example.com/label-{i:03}": "v" * 60 for i in range(labels)},
        }
    )


def test_the_size_limit_counts_each_pools_labels_and_names_the_worst_pool() -> None:
    text = "#!/bin/bash\n" + "echo 0123456789abcdef\n" * 560  # fits with a bare pool
    node_class = NodeClassSpec.model_validate({"name": "big", "userData": text})
    small, large = _pool("small", 2), _pool("large", 40)
    assert rules.user_data_problems([node_class], [small]) == []
    sent = user_data_merged.size("al2023", text, {}, user_data_merged.pool_of(large, "big"))
    assert sent > user_data_merged.EC2_USER_DATA_BYTES
    assert rules.user_data_problems([node_class], [small, large]) == [
        f"nodeClasses 'big': the user data Karpenter would send to a node of nodePools 'large' is {sent} bytes (the "
        "class's userData, 12332 bytes, and Karpenter's al2023 part with the pool's labels, taints and the class's "
        "kubelet settings): EC2 takes at most 16384; shorten the user data or the pool's labels"
    ]


def test_the_app_refuses_a_pool_whose_nodes_user_data_is_too_large() -> None:
    context = {
        **PRODUCT_CONTEXT,
        "nodeClasses": [{"name": "big", "userData": "#!/bin/bash\n" + "echo 0123456789abcdef\n" * 560}],
        "nodePools": [
            {"name": "large", "nodeClass": "big", "labels": {f"team.example.com/l{i:03}": "v" * 60 for i in range(40)}}
        ],
    }
    with pytest.raises(ConfigError) as info:
        load_config(context, today=TODAY)
    assert "nodeClasses 'big': the user data Karpenter would send to a node of nodePools 'large' is " in str(info.value)
