"""The scans: the security report of your configuration (``make security-report``: cdk-nag, checkov and cfn-lint as
tables and SARIF, ``security_report``) and the scanners as commands of their own (``make scan``: cfn-lint and
checkov over the app's templates, ``templates/`` and your configuration's synth, ``scan``)."""
