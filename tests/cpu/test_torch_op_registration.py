"""Registering the torch ops' C++ implementation (cpp/jitkernel/torch_op/): what happens where it cannot be done.
The registration itself and the kernels run on a GPU machine (tests/gpu/test_torch_op_kernels_gpu.py)."""
import os
import subprocess
import sys

import pytest

import jitkernel as jk
from jitkernel import _core


def test_a_library_the_process_did_not_load_is_named():
    # In a fresh process: where a CUDA torch was imported here, the registration has run already (once per process).
    code = ("import jitkernel as jk\n"
            "from jitkernel import _core\n"
            "try:\n"
            "    _core._register_torch_op_kernels(['/nonexistent/libtorch_cpu.so'])\n"
            "except jk.JitKernelError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "needs /nonexistent/libtorch_cpu.so loaded by the process" in out.stdout, out.stdout + out.stderr


def test_a_libtorch_without_the_cuda_part_of_the_abi_is_named():
    torch = pytest.importorskip("torch")
    if torch.version.cuda is not None:
        pytest.skip("this torch has CUDA: the registration succeeds (GPU tests)")
    cpu = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    if not os.path.exists(cpu):
        pytest.skip("no libtorch_cpu.so in this torch")
    with pytest.raises(jk.JitKernelError, match=r"libtorch has no aoti_torch_get_current_cuda_stream"):
        _core._register_torch_op_kernels([cpu])


def test_a_torch_without_cuda_keeps_the_python_implementation_without_warning(recwarn):
    torch = pytest.importorskip("torch")
    if torch.version.cuda is not None:
        pytest.skip("this torch has CUDA")
    from jitkernel._frameworks import torch_ops

    torch_ops.register(torch)
    dump = torch._C._dispatch_dump("jitkernel::launch")
    assert "CompositeExplicitAutograd" in dump and "\nCUDA:" not in dump
    assert not [w for w in recwarn if "jitkernel" in str(w.message)]


def test_the_ops_error_messages_come_back_as_jitkernel_errors():
    from jitkernel._errors import from_op_message

    e = from_op_message("jitkernel.ArgumentError: inputs: inputs[0] (x) is float64 with 2 dims")
    assert type(e) is jk.ArgumentError and e.argument == "inputs" and str(e) == "inputs: inputs[0] (x) is float64 with 2 dims"
    e = from_op_message("jitkernel.ArgumentTypeError: outputs: outputs[1]: a traced jitkernel call runs on CUDA tensors")
    assert type(e) is jk.ArgumentTypeError and e.argument == "outputs"
    e = from_op_message("jitkernel.CompileError: compiling kernel 'k' failed:\nsource line 2: error: x")
    assert type(e) is jk.CompileError and "source line 2" in str(e)
    assert type(from_op_message("jitkernel.KernelFaultError: kernel 'k' faulted")) is jk.KernelFaultError
    for other in ("CUDA error: out of memory", "jitkernel.NoSuchError: x", "jitkernel._NamesArgument: a: b",
                  "jitkernel.ArgumentError"):
        assert from_op_message(other) is None, other
