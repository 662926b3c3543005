"""The construct library. ``karpenter/`` is the reusable Karpenter construct, a package that imports nothing else of
this project; the modules beside it are the constructs only this app composes (VPC, controller hosting, add-ons,
stack protection, the delivery pipeline). Each takes its inputs as keyword arguments and exposes the handles others
need; none reaches into another's internals."""
