"""Typed, validated specifications of Karpenter's Kubernetes objects: the props of the
:class:`~constructs_lib.karpenter.Karpenter` construct, one module per object.

* ``base``: the base model and the generic validators (names, labels, quantities, how messages echo values);
* ``ec2``: EC2 and EBS facts (ids, tags, instance types and families, volume limits);
* ``ami``: what each AMI family needs and offers (aliases, operating system, devices, snapshot sizes,
  which Kubernetes minors it has images for);
* ``node_class`` (its settings declared in ``node_class_settings``) and ``kubelet``: the EC2NodeClass;
  ``node_pool``: the NodePool; ``node_overlay``: the NodeOverlay;
* ``controller``: the controller's settings and the one table of feature gates;
* ``rules``: what makes classes, pools, overlays and feature gates unusable together;
* ``change``: what changing a field does on a running cluster (in place, behavioral, static or dynamic drift,
  replace), declared on every field of the node specs, and the tables derived from it.
"""
