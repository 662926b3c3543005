"""Karpenter's releases: importing one (``make karpenter-import``: ``karpenter_import``, with its parts ``import_base``,
``import_fetch``, ``import_template`` and ``import_write``; upstream's charts rendered by the project's Helm,
``chart_render`` and ``helm``; the project's template against upstream's, ``template_parity``, ``make
template-diff``), what moving between two kept releases changes (``make release-report``: ``release_report``, with its
parts ``report_base``, ``report_settings`` and ``report_crds``, and the CRD paths the app writes, ``crd_paths``),
Karpenter's defaults and examples against the app's (``upstream_defaults``, ``upstream_examples``, ``make
upstream-examples``) and the logical ids a release keeps (``release_logical_ids``, ``make release-ids``)."""
