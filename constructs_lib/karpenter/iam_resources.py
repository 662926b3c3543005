"""Every IAM grant a CloudFormation template makes, whatever resource type or intrinsic holds it.

With the one table of what grants (constructs_lib/karpenter/iam_types.py), :func:`read_grants` reads a template's grants
per principal:

- identities: ``AWS::IAM::Role`` (inline ``Policies``, ``ManagedPolicyArns``, its trust ``AssumeRolePolicyDocument``),
  ``AWS::IAM::User`` and ``AWS::IAM::Group`` (``Policies``, ``ManagedPolicyArns``);
- policies, to whom they are attached: ``AWS::IAM::Policy`` and ``AWS::IAM::ManagedPolicy`` (``Roles``, ``Users``,
  ``Groups``; every managed policy is also the controller's: the installer attaches all of them to its role),
  ``AWS::IAM::RolePolicy`` / ``UserPolicy`` / ``GroupPolicy`` (``RoleName`` / ``UserName`` / ``GroupName``);
- what else hands out access: instance profiles, group memberships, access keys, service-linked roles, identity
  providers; resource policies (queues, topics, buckets, keys, secrets, repositories, log groups, Lambda permissions);
- nested stacks (``AWS::CloudFormation::Stack``), through a reader of the nested template (``cdk.out/``).

A document is read as written or through ``Fn::Sub`` / ``Fn::Join`` (a JSON string), ``Fn::ToJsonString`` and
``Fn::If`` (both branches); one the gate cannot read statically (``Ref`` to a parameter, ``Fn::ImportValue``, an
unknown key, a statement without ``Effect``...) is refused, never skipped: one line naming the resource, its type and
the property, in :class:`GrantError`. So is an ``AWS::IAM::*`` type the table does not know, and a resource of any
other type that holds a policy document.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from .iam_grants import Grant, grants, render
from .iam_types import GRANTING, NO_GRANT

CONTROLLER = "the controller's managed policies"
WHERE_THE_TABLE_IS = "constructs_lib/karpenter/iam_types.py"


class GrantError(ValueError):
    """Grants the gate cannot read: one line per problem (``lines``)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


_IDENTITY_TYPES = {"role": "AWS::IAM::Role", "user": "AWS::IAM::User", "group": "AWS::IAM::Group"}
_DOCUMENT_KEYS = {"Version", "Id", "Statement"}
_STATEMENT_KEYS = {"Sid", "Effect", "Action", "NotAction", "Resource", "NotResource", "Principal", "NotPrincipal"}
_STATEMENT_KEYS |= {"Condition"}
_VALUE_FUNCTIONS = {"Ref", "Fn::Sub", "Fn::GetAtt", "Fn::Join"}  # what render writes as ${...}
_NO_VALUE = {"Ref": "AWS::NoValue"}


def is_intrinsic(node: Any) -> bool:
    return (
        isinstance(node, dict) and len(node) == 1 and (next(iter(node)) == "Ref" or next(iter(node)).startswith("Fn::"))
    )


NestedReader = Callable[[str, Mapping[str, Any]], tuple[str, Mapping[str, Any]]]


def no_nested(logical_id: str, resource: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The nested-stack reader of a template read on its own: there is no nested template to read."""
    raise _Refused(
        "a nested stack's template is not part of this file (TemplateURL points elsewhere), so its grants cannot be "
        "read; put its resources in this template"
    )


class _Refused(Exception):
    """One problem of one resource property (the reader adds where)."""


def read_grants(
    template: Mapping[str, Any],
    where: str,
    *,
    nested: NestedReader = no_nested,
    cluster_name: str | None = None,
) -> dict[str, list[Grant]]:
    """Every grant of ``template`` per principal; raises :class:`GrantError` (one line per problem) when a grant
    cannot be read. ``where`` names the template in the lines; ``nested`` reads a nested stack's template (name and
    template); with ``cluster_name``, a condition key that holds it is written back as ``${ClusterName}``."""
    reader = _Reader(template, where, nested, cluster_name)
    found = reader.read()
    if reader.problems:
        raise GrantError(reader.problems)
    return found


class _Reader:
    def __init__(self, template: Mapping[str, Any], where: str, nested: NestedReader, cluster_name: str | None) -> None:
        self.template, self.where, self.nested, self.cluster_name = template, where, nested, cluster_name
        self.resources: Mapping[str, Any] = template.get("Resources") or {}
        self.problems: list[str] = []
        self.found: dict[str, list[Grant]] = {}

    def read(self) -> dict[str, list[Grant]]:
        if "Transform" in self.template:
            self.problems.append(
                f"{self.where}: Transform {render(self.template['Transform'])}: a transform writes resources the gate "
                "cannot see before it runs; write the template as it is deployed"
            )
        if not isinstance(self.resources, dict):
            self.problems.append(f"{self.where}: Resources is not a mapping of logical ids to resources")
            return {}
        for logical_id, resource in self.resources.items():
            if not isinstance(resource, dict):
                continue
            kind = str(resource.get("Type"))
            props = resource.get("Properties") or {}
            at = f"{self.where}: Resources.{logical_id} ({kind})"
            try:
                if not isinstance(props, dict):
                    raise _Refused("Properties is not a mapping")
                if kind in GRANTING:
                    for principal, grant in self._grants(logical_id, kind, props):
                        self.found.setdefault(principal, []).append(grant)
                elif kind.startswith("AWS::IAM::") and kind not in NO_GRANT:
                    raise _Refused(
                        f"an IAM type the gate does not know, so it cannot tell what it grants; add the type to "
                        f"{WHERE_THE_TABLE_IS} (GRANTING or NO_GRANT) or remove the resource"
                    )
                else:
                    held = _document_path(props)
                    if held:
                        raise _Refused(
                            f"{held} holds a policy document and the gate does not read this type's grants; add the "
                            f"type to {WHERE_THE_TABLE_IS} (GRANTING) or remove the document"
                        )
            except _Refused as refused:
                self.problems.append(f"{at}: {refused}")
            except GrantError as nested:
                self.problems.extend(nested.lines)
        return self.found

    # -- principals

    def identity(self, logical_id: str, resource: Mapping[str, Any]) -> str:
        kind = GRANTING[str(resource["Type"])]
        name = (resource.get("Properties") or {}).get(kind.name_property, logical_id)
        return f"{kind.identity} {self.value(name, kind.name_property)}"

    def principal(self, kind: str, node: Any, prop: str) -> str:
        """A role, user or group named in an attachment: a Ref to one of the template's is that identity."""
        if isinstance(node, dict) and set(node) == {"Ref"}:
            target = self.resources.get(node["Ref"])
            if isinstance(target, dict) and target.get("Type") == _IDENTITY_TYPES[kind]:
                return self.identity(node["Ref"], target)
        return f"{kind} {self.value(node, prop)}"

    # -- values

    def value(self, node: Any, prop: str) -> str:
        """A name, ARN or resource as the grants write it; an intrinsic render cannot write is refused."""
        if isinstance(node, (str, int, float, bool)):
            return str(node)
        if is_intrinsic(node) and next(iter(node)) in _VALUE_FUNCTIONS:
            return render(node)
        raise _Refused(f"{prop} is {_short(node)}, which the gate cannot read statically; write the value out")

    def items(self, node: Any, prop: str) -> list[Any]:
        """A list property, with Fn::If read as both branches (AWS::NoValue: nothing)."""
        if node is None or node == _NO_VALUE:
            return []
        if isinstance(node, list):
            return [item for each in node for item in self.branches(each, prop)]
        if is_intrinsic(node) and "Fn::If" in node:
            return [item for branch in self.if_branches(node, prop) for item in self.items(branch, prop)]
        raise _Refused(f"{prop} is {_short(node)}, a list the gate cannot read statically; write the list out")

    def branches(self, node: Any, prop: str) -> list[Any]:
        if node == _NO_VALUE:
            return []
        if is_intrinsic(node) and "Fn::If" in node:
            return [leaf for branch in self.if_branches(node, prop) for leaf in self.branches(branch, prop)]
        return [node]

    @staticmethod
    def if_branches(node: Mapping[str, Any], prop: str) -> list[Any]:
        arg = node["Fn::If"]
        if not isinstance(arg, list) or len(arg) != 3:
            raise _Refused(f"{prop}: Fn::If takes [condition, value if true, value if false]")
        return [arg[1], arg[2]]

    # -- documents

    def documents(self, node: Any, prop: str) -> list[dict[str, Any]]:
        """The policy documents a property can hold (Fn::If: both), each as {"Statement": [statements]}."""
        if node == _NO_VALUE:
            return []
        if is_intrinsic(node):
            ((fn, arg),) = node.items()
            if fn == "Fn::If":
                return [d for branch in self.if_branches(node, prop) for d in self.documents(branch, prop)]
            if fn == "Fn::ToJsonString":
                return self.documents(arg, prop)
            if fn in ("Fn::Sub", "Fn::Join"):
                return self.documents(self.text(fn, arg, prop), prop)
            raise _Refused(
                f"{prop} is given through {_short(node)}: a policy document the gate cannot read statically; write "
                "the document out (a JSON object, or a !Sub string of one)"
            )
        if isinstance(node, str):
            try:
                node = json.loads(node)
            except json.JSONDecodeError as error:
                raise _Refused(
                    f"{prop} is not a JSON policy document ({error.msg} at line {error.lineno}, column {error.colno}); "
                    "the gate cannot read its grants"
                ) from None
        if not isinstance(node, dict):
            raise _Refused(f"{prop} is {_short(node)}, not a policy document")
        unknown = sorted(set(node) - _DOCUMENT_KEYS)
        if unknown:
            raise _Refused(f"{prop} has {unknown}: a policy document has only {sorted(_DOCUMENT_KEYS)}")
        statements = [s for each in _as_list(node.get("Statement", [])) for s in self.branches(each, prop)]
        for i, statement in enumerate(statements):
            self.check_statement(statement, f"{prop}.Statement[{i}]")
        return [{"Statement": statements}]

    def text(self, fn: str, arg: Any, prop: str) -> str:
        """The string of a Fn::Sub or Fn::Join, its intrinsics written as ${...}."""
        if fn == "Fn::Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1]) if len(arg) == 2 else (None, {})
            if not isinstance(text, str) or not isinstance(variables, dict):
                raise _Refused(f"{prop}: Fn::Sub takes a string, or [string, variables]")
            for name, value in variables.items():
                self.value(value, f"{prop} (Fn::Sub variable {name})")
            return render({"Fn::Sub": arg})
        if not (isinstance(arg, list) and len(arg) == 2 and isinstance(arg[0], str) and isinstance(arg[1], list)):
            raise _Refused(f"{prop}: Fn::Join takes [delimiter, [values]]")
        return arg[0].join(self.value(part, prop) for part in arg[1])

    def check_statement(self, statement: Any, at: str) -> None:
        if not isinstance(statement, dict) or is_intrinsic(statement):
            raise _Refused(f"{at} is {_short(statement)}, not a statement the gate can read statically")
        unknown = sorted(set(statement) - _STATEMENT_KEYS)
        if unknown:
            raise _Refused(f"{at} has {unknown}, which IAM does not read as a statement's elements")
        if statement.get("Effect") not in ("Allow", "Deny"):
            raise _Refused(f"{at}: Effect is {_short(statement.get('Effect'))}, not Allow or Deny")
        actions = [k for k in ("Action", "NotAction") if k in statement]
        if len(actions) != 1:
            raise _Refused(f"{at} needs exactly one of Action and NotAction")
        for action in _as_list(statement[actions[0]]):
            if not isinstance(action, str) or "${" in action:
                raise _Refused(f"{at}.{actions[0]} holds {_short(action)}: an action is written out, never computed")
        for key in ("Resource", "NotResource"):
            for resource in _as_list(statement.get(key, [])):
                self.value(resource, f"{at}.{key}")
        for key in ("Principal", "NotPrincipal"):
            principal = statement.get(key)
            if isinstance(principal, dict) and not is_intrinsic(principal):
                for value in principal.values():
                    for each in _as_list(value):
                        self.value(each, f"{at}.{key}")
            elif principal is not None:
                self.value(principal, f"{at}.{key}")
        condition = statement.get("Condition", {})
        if not isinstance(condition, dict) or any(not isinstance(pairs, dict) for pairs in condition.values()):
            raise _Refused(f"{at}.Condition is {_short(condition)}, not operator -> key -> values")

    # -- the grants of each type

    def _document_grants(self, logical_id: str, node: Any, prop: str, policy: str = "") -> list[Grant]:
        return [
            grant
            for document in self.documents(node, prop)
            for grant in grants(policy or logical_id, document, self.cluster_name)
        ]

    def _grants(self, logical_id: str, type_: str, props: Mapping[str, Any]) -> Iterator[tuple[str, Grant]]:
        kind = GRANTING[type_]
        resource = self.resources[logical_id]
        if type_ == "AWS::CloudFormation::Stack":
            yield from self._nested(logical_id, resource)
            return
        if kind.identity:
            who = self.identity(logical_id, resource)
            for grant in self._identity_grants(logical_id, props):
                yield who, grant
            if type_ == "AWS::IAM::Role":
                for grant in self._document_grants(
                    logical_id, props.get("AssumeRolePolicyDocument"), "AssumeRolePolicyDocument"
                ):
                    yield who, grant
            return
        if kind.to_one[0] or kind.attaches:
            held = [
                grant for prop in kind.documents for grant in self._document_grants(logical_id, props.get(prop), prop)
            ]
            if kind.to_one[0]:
                prop, who_kind = kind.to_one
                if prop not in props:
                    raise _Refused(f"{prop} is missing: the gate cannot tell whose policy this is")
                principals = [self.principal(who_kind, props[prop], prop)]
            else:
                principals = [
                    self.principal(who_kind, node, prop)
                    for prop, who_kind in kind.attaches
                    for node in self.items(props.get(prop), prop)
                ]
                if type_ == "AWS::IAM::ManagedPolicy":
                    principals.insert(0, CONTROLLER)
                elif not principals:
                    principals = [f"{type_} {logical_id} (attached to nothing)"]
            for principal in principals:
                for grant in held:
                    yield principal, grant
            return
        who = f"{type_} {logical_id}"
        if kind.documents:
            for prop in kind.documents:
                if prop not in props:
                    raise _Refused(f"{prop} is missing")
                for grant in self._document_grants(logical_id, props[prop], prop):
                    yield who, grant
            return
        for grant in self._other_grants(logical_id, type_, props):
            yield who, grant

    def _identity_grants(self, logical_id: str, props: Mapping[str, Any]) -> Iterator[Grant]:
        for inline in self.items(props.get("Policies"), "Policies"):
            if not isinstance(inline, dict) or "PolicyDocument" not in inline:
                raise _Refused(f"Policies holds {_short(inline)}, not a {{PolicyName, PolicyDocument}}")
            name = self.value(inline.get("PolicyName", "?"), "Policies.PolicyName")
            yield from self._document_grants(
                logical_id, inline["PolicyDocument"], f"Policies[{name}]", f"{logical_id}/{name}"
            )
        for arn in self.items(props.get("ManagedPolicyArns"), "ManagedPolicyArns"):
            yield _grant(logical_id, "ManagedPolicyArns", "attach", self.value(arn, "ManagedPolicyArns"))
        for group in self.items(props.get("Groups"), "Groups"):
            yield _grant(logical_id, "Groups", "member of group", self.value(group, "Groups"))
        if "PermissionsBoundary" in props:
            # a boundary narrows, as a Deny does: dropping upstream's widens (constructs_lib.karpenter.iam_grants.uncovered)
            boundary = self.value(props["PermissionsBoundary"], "PermissionsBoundary")
            yield Grant(logical_id, "PermissionsBoundary", "Deny", "beyond the boundary", boundary, frozenset())

    def _other_grants(self, logical_id: str, type_: str, props: Mapping[str, Any]) -> Iterator[Grant]:
        def one(prop: str) -> str:
            if prop not in props:
                raise _Refused(f"{prop} is missing")
            return self.value(props[prop], prop)

        if type_ == "AWS::IAM::InstanceProfile":
            for role in self.items(props.get("Roles"), "Roles"):
                yield _grant(logical_id, "Roles", "instance profile", self.value(role, "Roles"))
        elif type_ == "AWS::IAM::UserToGroupAddition":
            group = one("GroupName")
            for user in self.items(props.get("Users"), "Users"):
                yield _grant(
                    logical_id, "Users", "member of group", f"user {self.value(user, 'Users')} in group {group}"
                )
        elif type_ == "AWS::IAM::AccessKey":
            yield _grant(logical_id, "AccessKey", "access key", f"user {one('UserName')}")
        elif type_ == "AWS::IAM::ServiceLinkedRole":
            yield _grant(logical_id, "AWSServiceName", "service-linked role", one("AWSServiceName"))
        elif type_ == "AWS::IAM::OIDCProvider":
            url = one("Url")
            for client in self.items(props.get("ClientIdList"), "ClientIdList") or ["(any client)"]:
                yield _grant(
                    logical_id, "ClientIdList", "federate", f"{url} client {self.value(client, 'ClientIdList')}"
                )
        elif type_ == "AWS::IAM::SAMLProvider":
            yield _grant(logical_id, "SamlMetadataDocument", "federate", f"SAML provider {logical_id}")
        elif type_ == "AWS::Lambda::Permission":
            yield _grant(
                logical_id,
                "Permission",
                one("Action"),
                f"{one('FunctionName')} to principal {one('Principal')}"
                + "".join(f" when {p} {self.value(props[p], p)}" for p in ("SourceArn", "SourceAccount") if p in props),
            )

    def _nested(self, logical_id: str, resource: Mapping[str, Any]) -> Iterator[tuple[str, Grant]]:
        name, template = self.nested(logical_id, resource)
        for principal, found in read_grants(template, name, nested=self.nested, cluster_name=self.cluster_name).items():
            for grant in found:
                yield principal, grant


def _grant(policy: str, sid: str, action: str, resource: str) -> Grant:
    return Grant(policy, sid, "Allow", action, resource, frozenset())


def _as_list(node: Any) -> list[Any]:
    return node if isinstance(node, list) else [node]


def _short(node: Any) -> str:
    text = json.dumps(node, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _document_path(node: Any, path: str = "Properties") -> str:
    """Where a value holds a policy document (a mapping with a Statement), or ''."""
    if isinstance(node, dict):
        if "Statement" in node:
            return path
        for key, value in node.items():
            found = _document_path(value, f"{path}.{key}")
            if found:
                return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found = _document_path(value, f"{path}[{i}]")
            if found:
                return found
    return ""


def cdk_out_nested(outdir: Path) -> NestedReader:
    """The nested-stack reader of a synth: a nested stack's template is the file its ``aws:asset:path`` metadata
    names in ``outdir`` (cdk.out/); a nested stack without one, or whose file is not there, is refused."""
    root = outdir.resolve()

    def read(logical_id: str, resource: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
        path = (resource.get("Metadata") or {}).get("aws:asset:path")
        if not isinstance(path, str):
            raise _Refused(
                "a nested stack without aws:asset:path metadata: its template is not found in the synth, so its grants "
                "cannot be read; synthesize with asset metadata (the CDK's default)"
            )
        file = (root / path).resolve()
        if root not in file.parents or not file.is_file():
            raise _Refused(f"its template {path} is not a file of {outdir.name}/, so its grants cannot be read")
        try:
            loaded = json.loads(file.read_text())
        except (OSError, ValueError) as error:
            raise _Refused(f"its template {path} cannot be read ({error})") from None
        if not isinstance(loaded, dict):
            raise _Refused(f"its template {path} is not a CloudFormation template")
        return f"{outdir.name}/{path}", loaded

    return read
