"""The framework integrations: traced calls (``traced_call.py``, ``call_form.py``) become torch.library ops
(``torch_ops.py``, with their kernel and call strings in ``graph_records.py``) or XLA FFI custom calls
(``jax_call.py``); ``jk.sharded`` splits a function over GPUs (``sharding.py``, ``sharding_rules.py``,
``sharding_torch.py``, ``sharding_jax.py``); ``post_import.py`` sets them up once torch or JAX is imported.

This layer imports the kernel API (``_kernels/``) and the shared modules, never the fleet tools (``_fleet/``);
``jitkernel/__init__.py`` connects it to the kernels' registration points (tests/cpu/test_package_layout.py).
Importing this package imports none of its modules, and no module here imports torch or JAX at import time.
"""
