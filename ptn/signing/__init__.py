"""Layer 6, signatures beside a package (spec.md section 12): OpenSSF Model Signing bundles,
made and verified by the ``model-signing`` package (``ptn-tools[signing]``), imported only
when a signature is made or verified. Uses ptn.remote and the layers below it.
"""
