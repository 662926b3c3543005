"""The floor under any app of this scope: the CDK modules it must load (EKS, EC2, IAM, Lambda, the kubectl layer,
cdk-nag) and an empty stack, with CDK's built-in CloudFormation validator off as in this project. Only `make bench`
runs it, with the project's own environment: no app of this scope synthesizes faster than this."""

import aws_cdk as cdk
import cdk_nag  # noqa: F401  (the security gate's packs: loaded by every synth of this project)
from aws_cdk import aws_ec2, aws_eks, aws_iam, aws_lambda  # noqa: F401
from aws_cdk.lambda_layer_kubectl_v36 import KubectlV36Layer  # noqa: F401

app = cdk.App(builtin_cloud_formation_validation=False)
cdk.Stack(app, "floor")
app.synth()
