"""Node objects as their file writes them (``nodeManifests``): the spec of such an object holds the object itself,
and its ``manifest()`` is that object with only what belongs to the cluster filled in, never the spec's own
rendering. What a file leaves out stays out: the CRD's defaults apply (the API server fills them in, as on a
``kubectl apply`` of the file), and Karpenter's own defaults where the CRD has none (e.g. an AMI family's volumes).

What the app fills in:

* ``spec.role`` of an EC2NodeClass, where the file gives none or names the app's node role (the converter removes
  it then): the node role the construct passes (its Windows node role for Windows classes);
* the discovery-tag selector terms of the cluster (``{tags: {karpenter.sh/discovery: <cluster>}}``) in
  ``subnetSelectorTerms`` and ``securityGroupSelectorTerms``: the app's own selection, in the term's place (the
  same term, or the ids the construct selects by); a list without that term gets the app's selection first, a
  class without the list gets it alone (the CRD requires both lists).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from pydantic import PrivateAttr

from ..names import DISCOVERY_TAG_KEY
from .base import CamelModel

SELECTOR_LISTS = ("subnetSelectorTerms", "securityGroupSelectorTerms")


class NodeObjectSpec(CamelModel):
    """A spec that may come from a file: then it holds the object as written (``written``)."""

    _written: dict[str, Any] | None = PrivateAttr(None)

    @property
    def written(self) -> dict[str, Any] | None:
        """The object as its file writes it (placeholders filled, the app's role left out), or None (typed)."""
        return self._written

    def as_written(self, obj: dict[str, Any]) -> NodeObjectSpec:
        """This spec, deploying ``obj`` as written (``manifest()`` returns it with the cluster's fill-ins)."""
        self._written = copy.deepcopy(obj)
        return self


def discovery_term(cluster_name: str) -> dict[str, Any]:
    return {"tags": {DISCOVERY_TAG_KEY: cluster_name}}


def filled_class(
    written: dict[str, Any],
    *,
    cluster_name: str,
    node_role_name: str,
    subnet_ids: Sequence[str] = (),
    security_group_ids: Sequence[str] = (),
) -> dict[str, Any]:
    """An EC2NodeClass as written, with the node role and the cluster's selections filled in."""
    obj = copy.deepcopy(written)
    spec = obj["spec"]
    if "role" not in spec and "instanceProfile" not in spec:
        obj["spec"] = spec = {"role": node_role_name, **spec}
    for key, ids in zip(SELECTOR_LISTS, (subnet_ids, security_group_ids), strict=True):
        ours = [{"id": i} for i in ids] if ids else [discovery_term(cluster_name)]
        terms = spec.get(key)
        if not terms:
            spec[key] = ours
        elif discovery_term(cluster_name) in terms:
            spec[key] = [t for term in terms for t in (ours if term == discovery_term(cluster_name) else [term])]
        else:
            spec[key] = [*ours, *terms]
    return obj


def filled(written: dict[str, Any]) -> dict[str, Any]:
    """A NodePool or NodeOverlay as written: nothing of the cluster's is in it besides what the converter filled."""
    return copy.deepcopy(written)
