"""Check 3 of the Metal backend (docs/metal.md): every Metal source the tests generate (the cases of
_metal_cases.py, plus the kernels below) parses with clang as C++17 against jitkernel's metal_stdlib shim
(tests/metal_shim/msl). An approximate check without Apple's compiler: it catches syntax errors, unknown names,
wrong overloads and errors in template instantiations in the generated signature, the metal_utils headers and
the kernel bodies, but not everything Metal rejects (the shim's header says what it does not model). The kernels
that must NOT parse show that the check can fail.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import _metal_cases
import _metal_clang as mc
import jitkernel as jk

CASES = _metal_cases.all_metal_cases()

# Cases whose text is generated for the byte comparison with MLX but is not valid Metal either; each must fail to
# parse, for the reason given (the test fails once a case parses, so this list cannot go stale).
KNOWN_INVALID = {
    "dtype_complex64_template": ("assigns a complex64_t (T) to a float output: Metal has no such conversion",
                                 "assigning to 'float' from incompatible type 'complex_t<float>'"),
}

_F32 = np.zeros(64, dtype=np.float32)

# Kernels written for this check: idioms of MLX kernels the shim must accept (None), and mistakes it must
# reject (a part of clang's error message). (id, metal_kernel arguments, call arguments, expected error)
EXTRA = [
    ("threadgroup_reduction", dict(source="""
        threadgroup float partial[32];
        uint lane = thread_index_in_simdgroup;
        float v = simd_sum(inp[thread_position_in_grid.x]);
        if (lane == 0) partial[simdgroup_index_in_threadgroup] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (thread_index_in_threadgroup == 0) {
          float total = 0.0f;
          for (uint i = 0; i < simdgroups_per_threadgroup; ++i) total += partial[i];
          atomic_fetch_add_explicit(&out[0], total, memory_order_relaxed);
        }
    """, atomic_outputs=True), dict(inputs=[_F32], output_dtypes=[jk.float32]), None),
    ("vectors_and_math", dict(source="""
        uint3 pos = thread_position_in_grid;
        float4 v = float4(inp[pos.x], 1.0f, float2(2.0f, 3));
        float2 w = v.xy * v.zw + float2(0.5f);
        half h = static_cast<half>(metal::precise::exp(w.x)) + 1.0h;
        out[pos.x] = metal::fast::tanh(float(h)) + dot(v, v) + metal::max(w.y, 0.0f)
                     + metal::clamp(v.z, 0.0f, 1.0f) + as_type<float>(as_type<uint>(v.w));
    """), dict(inputs=[_F32], output_dtypes=[jk.float32]), None),
    ("strided_template", dict(source="""
        uint elem = thread_position_in_grid.x;
        auto loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        out[elem] = static_cast<T>(inp[loc]) * Limits<T>::finite_max + metal::numeric_limits<T>::epsilon();
    """, ensure_row_contiguous=False),
     dict(inputs=[np.zeros((4, 8), np.float16)[:, ::2]], output_dtypes=[jk.bfloat16],
          template=[("T", jk.bfloat16)]), None),
    ("header_helper_device_ref", dict(header="""
        template <typename T>
        METAL_FUNC void accumulate(device T& total, T value) { total += value; }
    """, source="""
        accumulate(out[0], inp[thread_position_in_grid.x]);
    """), dict(inputs=[_F32], output_dtypes=[jk.float32]), None),
    ("unknown_function", dict(source="out[0] = metal::no_such_function(inp[0]);"),
     dict(inputs=[_F32], output_dtypes=[jk.float32]), "no_such_function"),
    ("missing_semicolon", dict(source="float x = inp[0]\nout[0] = x;"),
     dict(inputs=[_F32], output_dtypes=[jk.float32]), "expected ';'"),
    ("write_to_const_input", dict(source="inp[0] = 1.0f; out[0] = 0.0f;"),
     dict(inputs=[_F32], output_dtypes=[jk.float32]), "read-only"),
    ("device_pointer_as_threadgroup", dict(source="threadgroup float* p = out; p[0] = inp[0];"),
     dict(inputs=[_F32], output_dtypes=[jk.float32]), "cannot initialize a variable of type '__local float *'"),
    ("as_type_size_mismatch", dict(source="out[0] = as_type<float>(half(inp[0]));"),
     dict(inputs=[_F32], output_dtypes=[jk.float32]), "same size"),
    ("template_body_error", dict(source="out[0] = T::no_member;"),
     dict(inputs=[_F32], output_dtypes=[jk.float32], template=[("T", jk.float32)]), "no_member"),
]


@pytest.fixture(scope="module")
def clang():
    return mc.need(mc.find_clang())


def _source(kernel, kwargs) -> str:
    return _metal_cases.metal_source(kernel, kwargs)


def _extra_source(kernel_args: dict, call: dict) -> str:
    kernel = jk.metal_kernel(name="check", input_names=["inp"], output_names=["out"], **kernel_args)
    return kernel.source(inputs=call["inputs"], output_dtypes=call["output_dtypes"],
                         template=call.get("template"), with_utils=True)


@pytest.fixture(scope="module")
def parsed(clang, tmp_path_factory):
    """{id: (clang's result, the C++ text)} for every case and extra kernel, compiled in parallel once."""
    folder = tmp_path_factory.mktemp("metal_sources")
    texts = {cid: _source(kernel, kwargs) for cid, kernel, kwargs in CASES}
    texts.update({f"extra:{eid}": _extra_source(kargs, call) for eid, kargs, call, _ in EXTRA})
    jobs, cpp = {}, {}
    for i, (key, metal) in enumerate(texts.items()):
        cpp[key], _ = mc.as_cpp(metal)
        path = folder / f"case{i}.metal"
        path.write_text(cpp[key])
        jobs[key] = mc.msl_command(clang, path)
    results = mc.run_parallel(jobs)
    return {key: (results[key], cpp[key]) for key in jobs}


def _report(result, text: str) -> str:
    """clang's messages and the lines around the first one it points at."""
    lines = text.splitlines()
    m = re.search(r"\.metal:(\d+):\d+: error", result.stderr)
    at = int(m.group(1)) if m else len(lines)
    excerpt = "\n".join(f"{n:5}: {lines[n - 1]}" for n in range(max(1, at - 12), min(len(lines), at + 8) + 1))
    return f"clang said:\n{result.stderr}\n--- the C++ it parsed, around line {at} ---\n{excerpt}"


def test_cases_exist():
    # The check is only as good as its inputs: the shared cases must be there, the documented examples among them.
    ids = {cid for cid, _, _ in CASES}
    assert len(ids) == len(CASES) >= 50
    assert {"seed000_myexp", "seed002_myexp_strided", "docs_grid_sample", "docs_grid_sample_vjp"} <= ids
    assert set(KNOWN_INVALID) <= ids, "KNOWN_INVALID names a case that no longer exists"


@pytest.mark.parametrize("case_id", [cid for cid, _, _ in CASES])
def test_generated_source_parses(parsed, case_id):
    result, text = parsed[case_id]
    if case_id in KNOWN_INVALID:
        why, message = KNOWN_INVALID[case_id]
        assert result.returncode != 0, f"{case_id} now parses: remove it from KNOWN_INVALID ({why})"
        assert message in result.stderr, _report(result, text)
        return
    assert result.returncode == 0, _report(result, text)


@pytest.mark.parametrize("extra_id,expected", [(e[0], e[3]) for e in EXTRA], ids=[e[0] for e in EXTRA])
def test_extra_kernel(parsed, extra_id, expected):
    result, text = parsed[f"extra:{extra_id}"]
    if expected is None:
        assert result.returncode == 0, _report(result, text)
    else:
        assert result.returncode != 0, f"{extra_id} should not parse:\n{text[-2000:]}"
        assert expected in result.stderr, _report(result, text)


# ---- the two rewrites of as_cpp (no clang needed) -------------------------------------------------------------

def test_as_cpp_moves_nothing_but_the_instantiation_attributes():
    metal = ('template <typename T>\n[[kernel]] void k_f(device T* out [[buffer(0)]]) {}\n'
             'template [[host_name("k_f")]] [[kernel]] decltype(k_f<float>) k_f<float>;\n')
    text, hosts = mc.as_cpp(metal)
    assert hosts == ["k_f"]
    assert text.endswith("template decltype(k_f<float>) k_f<float>;\n")
    assert "[[kernel]] void k_f(device T* out [[buffer(0)]])" in text


def test_as_cpp_rejects_a_host_name_that_differs():
    with pytest.raises(AssertionError, match="host_name"):
        mc.as_cpp('template [[host_name("a")]] [[kernel]] decltype(b<int>) b<int>;\n')


def test_as_cpp_makes_only_threadgroup_declarations_static():
    metal = ("void f(threadgroup float* p,\n       threadgroup int* q) {\n"
             "  // scratch space\n  threadgroup float buf[4];\n  x = 1; threadgroup int n;\n"
             "  threadgroup_barrier(mem_flags::mem_threadgroup);\n}\n")
    text, _ = mc.as_cpp(metal)
    assert "void f(threadgroup float* p,\n       threadgroup int* q)" in text
    assert "  static threadgroup float buf[4];" in text
    assert "x = 1; static threadgroup int n;" in text
    assert "  threadgroup_barrier(" in text
