"""The EKS + Karpenter stacks and their configuration."""
