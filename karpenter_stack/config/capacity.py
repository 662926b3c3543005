"""Whether the Karpenter controller fits the system node group it runs on (``controllerHosting=nodegroup``): one
controller replica per node (the chart's anti-affinity spreads the two replicas over the two nodes), beside what
every system node runs, against the node's allocatable CPU and memory. A controller that does not fit leaves its new
pod Pending: ``helm upgrade --wait`` times out and the deploy rolls back, after one old replica is gone.

Where each number comes from:

* vCPUs and memory per instance size (EC2 User Guide, instance type specifications): the burstable t3, t3a and t4g
  sizes, and the c, m and r families of the 5th generation and later (with the a, g, i, d suffixes) up to 4xlarge,
  whose sizes share them (2, 4, 8, 16 vCPUs; 2, 4, 8 GiB per vCPU). Other types are not checked (a warning says so).
* Pods per node: network interfaces x (IPv4 addresses per interface - 1) + 2 (EC2 User Guide, "IP addresses per
  network interface per instance type"; the formula of amazon-eks-ami's ``eni-max-pods.txt``), at most 110 below 30
  vCPUs (EKS's managed node group default).
* What the kubelet keeps (amazon-eks-ami's kubelet configuration, the same for AL2023's nodeadm): CPU 6% of the
  first core, 1% of the second, 0.5% of the next two, 0.25% of the rest; memory 11 MiB per pod + 255 MiB;
  eviction at 100 MiB available. Memory the hypervisor and kernel take: 7.5% (Karpenter's
  ``vmMemoryOverheadPercent`` default, the chart's, which estimates the same gap).
* Beside the controller on each node (EKS's add-on defaults): a CoreDNS replica (100m, 70Mi), kube-proxy (100m) and
  the VPC CNI's aws-node (25m).
"""

from __future__ import annotations

import re
from decimal import Decimal

from constructs_lib.karpenter.quantities import parse_quantity

VM_OVERHEAD = Decimal("0.075")
EVICTION_MIB = 100
SYSTEM_PODS = {"cpu_m": 100 + 100 + 25, "memory_mi": 70}  # CoreDNS, kube-proxy, aws-node
# size -> (vCPUs, GiB, network interfaces, IPv4 addresses per interface)
BURSTABLE = {
    "nano": (2, 0.5, 2, 2),
    "micro": (2, 1, 2, 2),
    "small": (2, 2, 3, 4),
    "medium": (2, 4, 3, 6),
    "large": (2, 8, 3, 12),
    "xlarge": (4, 16, 4, 15),
    "2xlarge": (8, 32, 4, 15),
}
STANDARD_SIZES = {"large": (2, 3, 10), "xlarge": (4, 4, 15), "2xlarge": (8, 4, 15), "4xlarge": (16, 8, 30)}
GIB_PER_VCPU = {"c": 2, "m": 4, "r": 8}
_BURSTABLE = re.compile(r"(t3|t3a|t4g)\.([a-z0-9]+)", re.ASCII)
_STANDARD = re.compile(r"([cmr])([5-8])(a|g|i|d|ad|gd|id)?\.([a-z0-9]+)", re.ASCII)


def shape(instance_type: str) -> tuple[int, float, int] | None:
    """(vCPUs, GiB, pods per node) of an instance type the table knows, else None."""
    burstable, standard = _BURSTABLE.fullmatch(instance_type), _STANDARD.fullmatch(instance_type)
    if burstable and burstable.group(2) in BURSTABLE:
        vcpus, gib, enis, ips = BURSTABLE[burstable.group(2)]
    elif standard and standard.group(4) in STANDARD_SIZES:
        vcpus, enis, ips = STANDARD_SIZES[standard.group(4)]
        gib = vcpus * GIB_PER_VCPU[standard.group(1)]
    else:
        return None
    pods = enis * (ips - 1) + 2
    return vcpus, gib, min(pods, 110) if vcpus < 30 else pods


def kubelet_cpu_m(vcpus: int) -> Decimal:
    """The CPU the kubelet keeps (kube-reserved), in millicores."""
    bands = ((1, Decimal("0.06")), (1, Decimal("0.01")), (2, Decimal("0.005")), (vcpus, Decimal("0.0025")))
    left, kept = vcpus, Decimal(0)
    for cores, share in bands:
        take = min(left, cores)
        kept += take * 1000 * share
        left -= take
    return kept


def allocatable(instance_type: str) -> tuple[int, int] | None:
    """(millicores, MiB) a node of the type has for pods, or None when the table does not know the type."""
    found = shape(instance_type)
    if found is None:
        return None
    vcpus, gib, pods = found
    memory = Decimal(str(gib)) * 1024 * (1 - VM_OVERHEAD) - (11 * pods + 255) - EVICTION_MIB
    return int(vcpus * 1000 - kubelet_cpu_m(vcpus)), int(memory)


def controller_fit(instance_type: str, cpu: str, memory: str) -> str | None:
    """Why one controller replica of ``cpu``/``memory`` does not fit a node of ``instance_type`` beside the system
    pods (None: it fits, or the type is not in the table: :func:`shape`)."""
    found = allocatable(instance_type)
    if found is None:
        return None
    cpu_m, memory_mi = found
    need_cpu = parse_quantity(cpu) * 1000 + SYSTEM_PODS["cpu_m"]
    need_memory = parse_quantity(memory) / (1024 * 1024) + SYSTEM_PODS["memory_mi"]
    if need_cpu <= cpu_m and need_memory <= memory_mi:
        return None
    bigger = next((t for t in _larger(instance_type) if _fits(t, need_cpu, need_memory)), None)
    return (
        f"each node of systemNodeInstanceType {instance_type} has about {cpu_m}m CPU and {memory_mi}Mi memory for "
        f"pods, and CoreDNS, kube-proxy and the VPC CNI take {SYSTEM_PODS['cpu_m']}m and {SYSTEM_PODS['memory_mi']}Mi "
        f"of it: a controller replica of {cpu} CPU and {memory} does not fit, its pod stays Pending and helm upgrade "
        "--wait times out (the deploy rolls back); "
        + (
            f"use systemNodeInstanceType {bigger} or larger, or "
            if bigger
            else "use a larger systemNodeInstanceType or "
        )
        + "a smaller controller.cpu / controller.memory"
    )


def _fits(instance_type: str, need_cpu: Decimal, need_memory: Decimal) -> bool:
    found = allocatable(instance_type)
    return found is not None and need_cpu <= found[0] and need_memory <= found[1]


def _larger(instance_type: str) -> list[str]:
    """The larger sizes of the type's family the table knows, smallest first."""
    family, _, size = instance_type.partition(".")
    sizes = list(BURSTABLE if _BURSTABLE.fullmatch(instance_type) else STANDARD_SIZES)
    return [f"{family}.{s}" for s in sizes[sizes.index(size) + 1 :]] if size in sizes else []
