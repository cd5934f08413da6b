"""The kernel API: ``cuda_kernel`` (``cuda_kernel.py``), ``metal_kernel`` (``metal_kernel.py``) and
``precompiled_cuda_kernel`` (``precompiled.py``), the front the kernel objects share (``front.py``), the types of
their calls for type checkers (``call_types.py``), SASS disassembly (``sass.py``), and the registration points where
a call that is not launched here goes (``call_routes.py``).

This layer imports only the extension and the shared modules beside this folder (``_errors``, ``_dtypes``, ...);
the framework integrations (``_frameworks/``) and the fleet tools (``_fleet/``) build on it, and plug into
``call_routes`` instead of being imported from here (tests/cpu/test_package_layout.py). Importing this package
imports none of its modules.
"""
