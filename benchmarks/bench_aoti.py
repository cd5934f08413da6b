"""A kernel call inside an AOTInductor package, run from C++ without Python: jitkernel's kernel against the same
model with the equivalent Triton kernel as a ``torch.library.triton_op`` (AOTInductor compiles Triton ops into its
package), each followed by the same ``sin`` Inductor generates. Packages both models, builds benchmarks/aoti (the
C++ program: torch's AOTIModelPackageLoader, jitkernel's ops defined by ``jk::torch_op::register_torch_library``),
and runs them there in interleaved rounds in one process; prints load time, first-call time, the median µs per
call and the paired ratio (median of per-round ratios). The kernel comes from the compile cache this script fills,
as on a serving machine.

    python3 benchmarks/bench_aoti.py [--n 4096] [--rounds 11] [--calls 2000]
"""
# No `from __future__ import annotations`: torch.library.triton_op reads the annotations as types.
import argparse
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "cpp"))
import user_programs  # noqa: E402

BODY = ("const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
        "if (i < x_shape[0]) y[i] = 2.0f * x[i] + 0.5f;")


def models():
    import torch
    import triton
    import triton.language as tl

    import jitkernel as jk

    twice = jk.cuda_kernel(name="aoti_bench_twice_plus", input_names=["x"], output_names=["y"], source=BODY)

    @triton.jit
    def twice_plus(X, Y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(Y + offs, 2.0 * tl.load(X + offs, mask=m) + 0.5, mask=m)

    @torch.library.triton_op("jk_bench::twice_plus", mutates_args=())
    def twice_plus_op(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        torch.library.wrap_triton(twice_plus)[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y

    class WithJitkernel(torch.nn.Module):
        def forward(self, x):
            return torch.sin(twice(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                                   grid=(x.shape[0], 1, 1), threadgroup=(256, 1, 1))[0])

    class WithTriton(torch.nn.Module):
        def forward(self, x):
            return torch.sin(twice_plus_op(x))

    return {"jitkernel": WithJitkernel(), "triton_op": WithTriton()}


def package(folder: str, n: int) -> dict:
    import torch

    x = torch.linspace(-3, 3, n, device="cuda")
    paths = {}
    for name, model in models().items():
        torch.testing.assert_close(model(x), torch.sin(2 * x + 0.5))  # also fills the compile cache
        paths[name] = torch._inductor.aoti_compile_and_package(torch.export.export(model, (x,)),
                                                               package_path=os.path.join(folder, name + ".pt2"))
    return paths


def build(folder: str) -> str:
    import torch

    out = user_programs.build(os.path.join(HERE, "aoti"), os.path.join(folder, "build"), [torch.utils.cmake_prefix_path])
    return os.path.join(out, "jitkernel_bench_aoti")


def report(lines: list, paths: dict) -> None:
    names = {v: k for k, v in paths.items()}
    per, load, first = {k: [] for k in paths}, {}, {}
    for line in lines:
        parts = line.split()
        if parts and parts[0] == "round":
            per[names[parts[2]]].append(float(parts[3]))
        elif parts and parts[0] in ("load", "first"):
            (load if parts[0] == "load" else first)[names[parts[1]]] = float(parts[2])
    ref = per["triton_op"]
    print("| package | load ms | first call ms | µs per call (median) | paired ratio vs triton_op |")
    print("|---|---:|---:|---:|---:|")
    for name, ts in per.items():
        ratio = statistics.median(a / b for a, b in zip(ts, ref))
        print(f"| {name} | {load[name]:.1f} | {first[name]:.2f} | {statistics.median(ts):.2f} | {ratio:.3f} |")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--calls", type=int, default=2000)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        os.environ["JITKERNEL_CACHE_DIR"] = os.path.join(folder, "cache")
        paths = package(folder, a.n)
        program = build(folder)
        # With the toolkit the Python side compiled with: the same cache keys.
        done = user_programs.run(program, [a.n, a.rounds, a.calls, *paths.values()], dict(os.environ))
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed:\n{done.stdout}{done.stderr}")
        import torch

        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, 2 x + 0.5 then sin over {a.n} float32, "
              f"{a.rounds} rounds x {a.calls} calls, from C++ (no Python)")
        report(done.stdout.splitlines(), paths)


if __name__ == "__main__":
    main()
