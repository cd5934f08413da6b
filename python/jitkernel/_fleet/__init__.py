"""The fleet tools: ahead-of-time builds (``precompile.py``, with the placeholder inputs of ``placeholders.py``),
replaying call records (``record_replay.py``), cache bundles (``bundle.py``) and the compile cache's API
(``cache.py``).

This layer imports the kernel API (``_kernels/``) and the shared modules, never the framework integrations
(``_frameworks/``) (tests/cpu/test_package_layout.py). Importing this package imports none of its modules.
"""
