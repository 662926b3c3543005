"""Small constructs the cluster stack composes. Each takes its inputs as keyword arguments and exposes
the handles others need; none reaches into another's internals."""
