"""Metal kernel cases shared by the metal_kernel tests: each is a kernel (``jk.metal_kernel``, the dict form of seed
000, or seed 002's ``jk.MetalKernel``) plus the keyword arguments of one call.

``all_metal_cases()`` -> ``[(id, kernel, call_kwargs)]`` lists every case whose source jitkernel generates (the
clang parse check of the Metal sources uses it: ``metal_source(kernel, call_kwargs)`` gives the full text);
``call_kwargs`` are those of ``kernel(...)`` (inputs, output_shapes, output_dtypes, grid, threadgroup, template,
init_value). ``SPECS`` holds the same cases as plain data, which ``_mlx_reference.py`` hands to MLX 0.32.4 to get
its text for the byte-for-byte comparison. A spec with ``mlx_differs`` is one where jitkernel deliberately writes
something else than MLX (docs/metal_codegen_differences.md); ``error`` marks a call jitkernel refuses.

Spec fields: id, name, input_names, output_names, source, header, ensure_row_contiguous, atomic_outputs, inputs
(``{"shape": [...], "dtype": name}`` or ``{"scalar": value}``), output_shapes, output_dtypes, template
(``[[name, int | bool | {"dtype": name}]]`` or None), grid, threadgroup, init_value, form ("list" | "dict" |
"seed002"), mlx_differs, error.
"""
from __future__ import annotations

import itertools

import numpy as np

import jitkernel as jk

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
          "float32", "float64", "complex64"]

# MLX 0.32.4's Metal attributes, in its order.
ATTRIBUTES = [
    ("dispatch_quadgroups_per_threadgroup", "uint"), ("dispatch_simdgroups_per_threadgroup", "uint"),
    ("dispatch_threads_per_threadgroup", "uint3"), ("grid_origin", "uint3"), ("grid_size", "uint3"),
    ("quadgroup_index_in_threadgroup", "uint"), ("quadgroups_per_threadgroup", "uint"),
    ("simdgroup_index_in_threadgroup", "uint"), ("simdgroups_per_threadgroup", "uint"),
    ("thread_execution_width", "uint"), ("thread_index_in_quadgroup", "uint"),
    ("thread_index_in_simdgroup", "uint"), ("thread_index_in_threadgroup", "uint"),
    ("thread_position_in_grid", "uint3"), ("thread_position_in_threadgroup", "uint3"),
    ("threadgroup_position_in_grid", "uint3"), ("threadgroups_per_grid", "uint3"), ("threads_per_grid", "uint3"),
    ("threads_per_simdgroup", "uint"), ("threads_per_threadgroup", "uint3"),
]


def _arr(shape, dtype="float32"):
    return {"shape": list(shape), "dtype": dtype}


def _spec(id, source, inputs, output_dtypes, *, input_names=None, output_names=None, output_shapes=None,
          template=None, header="", name="k", ensure_row_contiguous=True, atomic_outputs=False, grid=(1, 1, 1),
          threadgroup=(1, 1, 1), init_value=None, form="list", mlx_differs=None, error=None):
    if input_names is None:
        input_names = [f"in{i}" for i in range(len(inputs))]
    if output_names is None:
        output_names = ["out"] if len(output_dtypes) == 1 else [f"out{i}" for i in range(len(output_dtypes))]
    if output_shapes is None:
        output_shapes = [[4]] * len(output_dtypes)
    return {"id": id, "name": name, "input_names": list(input_names), "output_names": list(output_names),
            "source": source, "header": header, "ensure_row_contiguous": ensure_row_contiguous,
            "atomic_outputs": atomic_outputs, "inputs": list(inputs), "output_shapes": [list(s) for s in output_shapes],
            "output_dtypes": list(output_dtypes), "template": template, "grid": list(grid),
            "threadgroup": list(threadgroup), "init_value": init_value, "form": form, "mlx_differs": mlx_differs,
            "error": error}


# --------------------------------------------------------------------------- documented examples
_EXP = """
        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
    """
_EXP_STRIDED = """
        uint elem = thread_position_in_grid.x;
        // Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
        uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        T tmp = inp[loc];
        // Output arrays are always row contiguous
        out[elem] = metal::exp(tmp);
    """

# The grid_sample forward and VJP kernels of MLX's "Custom Metal Kernels" documentation.
_GRID_SAMPLE = """
      uint elem = thread_position_in_grid.x;
      int H = x_shape[1];
      int W = x_shape[2];
      int C = x_shape[3];
      int gH = grid_shape[1];
      int gW = grid_shape[2];

      int w_stride = C;
      int h_stride = W * w_stride;
      int b_stride = H * h_stride;

      uint grid_idx = elem / C * 2;
      float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
      float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

      int ix_nw = floor(ix);
      int iy_nw = floor(iy);

      int ix_ne = ix_nw + 1;
      int iy_ne = iy_nw;

      int ix_sw = ix_nw;
      int iy_sw = iy_nw + 1;

      int ix_se = ix_nw + 1;
      int iy_se = iy_nw + 1;

      T nw = (ix_se - ix)    * (iy_se - iy);
      T ne = (ix    - ix_sw) * (iy_sw - iy);
      T sw = (ix_ne - ix)    * (iy    - iy_ne);
      T se = (ix    - ix_nw) * (iy    - iy_nw);

      int batch_idx = elem / C / gH / gW * b_stride;
      int channel_idx = elem % C;
      int base_idx = batch_idx + channel_idx;

      T I_nw = x[base_idx + iy_nw * h_stride + ix_nw * w_stride];
      T I_ne = x[base_idx + iy_ne * h_stride + ix_ne * w_stride];
      T I_sw = x[base_idx + iy_sw * h_stride + ix_sw * w_stride];
      T I_se = x[base_idx + iy_se * h_stride + ix_se * w_stride];

      I_nw = iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1 ? I_nw : 0;
      I_ne = iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1 ? I_ne : 0;
      I_sw = iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1 ? I_sw : 0;
      I_se = iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1 ? I_se : 0;

      out[elem] = nw * I_nw + ne * I_ne + sw * I_sw + se * I_se;
  """
_GRID_SAMPLE_VJP = """
      uint elem = thread_position_in_grid.x;
      int H = x_shape[1];
      int W = x_shape[2];
      int C = x_shape[3];
      // Pad C to the nearest larger simdgroup size multiple
      int C_padded = ceildiv(C, threads_per_simdgroup) * threads_per_simdgroup;

      int gH = grid_shape[1];
      int gW = grid_shape[2];

      int w_stride = C;
      int h_stride = W * w_stride;
      int b_stride = H * h_stride;

      uint grid_idx = elem / C_padded * 2;
      float ix = ((grid[grid_idx] + 1) * W - 1) / 2;
      float iy = ((grid[grid_idx + 1] + 1) * H - 1) / 2;

      int ix_nw = floor(ix);
      int iy_nw = floor(iy);

      int ix_ne = ix_nw + 1;
      int iy_ne = iy_nw;

      int ix_sw = ix_nw;
      int iy_sw = iy_nw + 1;

      int ix_se = ix_nw + 1;
      int iy_se = iy_nw + 1;

      T nw = (ix_se - ix)    * (iy_se - iy);
      T ne = (ix    - ix_sw) * (iy_sw - iy);
      T sw = (ix_ne - ix)    * (iy    - iy_ne);
      T se = (ix    - ix_nw) * (iy    - iy_nw);

      int batch_idx = elem / C_padded / gH / gW * b_stride;
      int channel_idx = elem % C_padded;
      int base_idx = batch_idx + channel_idx;

      T gix = T(0);
      T giy = T(0);
      if (channel_idx < C) {
          int cot_index = elem / C_padded * C + channel_idx;
          T cot = cotangent[cot_index];
          if (iy_nw >= 0 && iy_nw <= H - 1 && ix_nw >= 0 && ix_nw <= W - 1) {
              int offset = base_idx + iy_nw * h_stride + ix_nw * w_stride;
              atomic_fetch_add_explicit(&x_grad[offset], nw * cot, memory_order_relaxed);

              T I_nw = x[offset];
              gix -= I_nw * (iy_se - iy) * cot;
              giy -= I_nw * (ix_se - ix) * cot;
          }
          if (iy_ne >= 0 && iy_ne <= H - 1 && ix_ne >= 0 && ix_ne <= W - 1) {
              int offset = base_idx + iy_ne * h_stride + ix_ne * w_stride;
              atomic_fetch_add_explicit(&x_grad[offset], ne * cot, memory_order_relaxed);

              T I_ne = x[offset];
              gix += I_ne * (iy_sw - iy) * cot;
              giy -= I_ne * (ix - ix_sw) * cot;
          }
          if (iy_sw >= 0 && iy_sw <= H - 1 && ix_sw >= 0 && ix_sw <= W - 1) {
              int offset = base_idx + iy_sw * h_stride + ix_sw * w_stride;
              atomic_fetch_add_explicit(&x_grad[offset], sw * cot, memory_order_relaxed);

              T I_sw = x[offset];
              gix -= I_sw * (iy - iy_ne) * cot;
              giy += I_sw * (ix_ne - ix) * cot;
          }
          if (iy_se >= 0 && iy_se <= H - 1 && ix_se >= 0 && ix_se <= W - 1) {
              int offset = base_idx + iy_se * h_stride + ix_se * w_stride;
              atomic_fetch_add_explicit(&x_grad[offset], se * cot, memory_order_relaxed);

              T I_se = x[offset];
              gix += I_se * (iy - iy_nw) * cot;
              giy += I_se * (ix - ix_nw) * cot;
          }
      }

      T gix_mult = W / 2;
      T giy_mult = H / 2;

      // Reduce across each simdgroup first.
      // This is much faster than relying purely on atomics.
      gix = simd_sum(gix);
      giy = simd_sum(giy);

      if (thread_index_in_simdgroup == 0) {
          atomic_fetch_add_explicit(&grid_grad[grid_idx], gix * gix_mult, memory_order_relaxed);
          atomic_fetch_add_explicit(&grid_grad[grid_idx + 1], giy * giy_mult, memory_order_relaxed);
      }
  """

_T32 = [["T", {"dtype": "float32"}]]

_DOCUMENTED = [
    # Seeds 000 (dict form, factory without names), 001 (list form) and 002 (MetalKernel), and MLX's docs.
    _spec("seed000_myexp", _EXP, [_arr((4, 16), "float16")], ["float16"], input_names=["inp"],
          output_shapes=[[4, 16]], template=_T32, name="myexp", grid=(64, 1, 1), threadgroup=(256, 1, 1),
          form="dict"),
    _spec("seed001_myexp", _EXP, [_arr((4, 16), "float16")], ["float16"], input_names=["inp"],
          output_shapes=[[4, 16]], template=_T32, name="myexp", grid=(64, 1, 1), threadgroup=(256, 1, 1)),
    _spec("seed002_myexp", _EXP, [_arr((4, 16), "float16")], ["float16"], input_names=["inp"],
          output_shapes=[[4, 16]], template=_T32, name="myexp", grid=(64, 1, 1), threadgroup=(256, 1, 1),
          form="seed002"),
    _spec("seed002_myexp_strided", _EXP_STRIDED, [_arr((2, 16), "float16")], ["float16"], input_names=["inp"],
          output_shapes=[[2, 16]], template=_T32, name="myexp_strided", ensure_row_contiguous=False,
          grid=(32, 1, 1), threadgroup=(256, 1, 1), form="seed002"),
    _spec("docs_myexp_strided", _EXP_STRIDED, [_arr((2, 16), "float16")], ["float16"], input_names=["inp"],
          output_shapes=[[2, 16]], template=_T32, name="myexp_strided", ensure_row_contiguous=False,
          grid=(32, 1, 1), threadgroup=(256, 1, 1)),
    _spec("docs_grid_sample", _GRID_SAMPLE, [_arr((2, 8, 8, 4)), _arr((2, 4, 4, 2))], ["float32"],
          input_names=["x", "grid"], output_shapes=[[2, 4, 4, 4]], template=[["T", {"dtype": "float32"}]],
          name="grid_sample", grid=(128, 1, 1), threadgroup=(256, 1, 1)),
    _spec("docs_grid_sample_vjp", _GRID_SAMPLE_VJP, [_arr((2, 8, 8, 4)), _arr((2, 4, 4, 2)), _arr((2, 4, 4, 4))],
          ["float32", "float32"], input_names=["x", "grid", "cotangent"], output_names=["x_grad", "grid_grad"],
          output_shapes=[[2, 8, 8, 4], [2, 4, 4, 2]], template=[["T", {"dtype": "float32"}]],
          name="grid_sample_grad", atomic_outputs=True, grid=(1024, 1, 1), threadgroup=(256, 1, 1),
          init_value=0),
    _spec("docs_grid_sample_float16", _GRID_SAMPLE, [_arr((1, 4, 4, 3), "float16"), _arr((1, 2, 2, 2), "float16")],
          ["float16"], input_names=["x", "grid"], output_shapes=[[1, 2, 2, 3]],
          template=[["T", {"dtype": "float16"}]], name="grid_sample", grid=(12, 1, 1), threadgroup=(256, 1, 1)),
]

# MLX's own tests' Metal kernels (python/tests/test_fast.py, test_custom_kernel_*).
_MLX_TESTS = [
    _spec("mlx_basic", """
                uint elem = thread_position_in_grid.x;
                out1[elem] = a[elem];
            """, [_arr((2, 2))], ["float32"], input_names=["a"], output_names=["out1"], output_shapes=[[2, 2]],
          name="basic", grid=(4, 1, 1), threadgroup=(2, 1, 1)),
    _spec("mlx_args", """
                uint elem = thread_position_in_grid.x;
                T tmp = a[0];
                if (e) {
                    out1[elem] = a[1] + b[2] + c[3] + d + f;
                } else {
                    out1[elem] = 1;
                }
                out2[elem] = a[1] + b[2] + c[1] - d;
            """, [_arr((3, 6)), _arr((3,), "int32"), _arr((2, 2), "bfloat16"), {"scalar": 7.3}],
          ["float32", "int32"], input_names=["a", "b", "c", "d"], output_names=["out1", "out2"],
          output_shapes=[[3, 2], [3, 2]], template=[["e", True], ["f", 3], ["T", {"dtype": "float16"}]],
          name="arg_test", grid=(6, 1, 1), threadgroup=(2, 1, 1)),
    _spec("mlx_strides_noncontiguous", """
                uint elem = thread_position_in_grid.x;
                uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
                T tmp = inp[loc];
                out[elem] = metal::precise::exp(tmp) * threads_per_simdgroup;
            """, [_arr((8, 6))], ["float32"], input_names=["inp"], output_shapes=[[8, 6]], template=_T32,
          name="myexpFalse", ensure_row_contiguous=False, grid=(48, 1, 1), threadgroup=(256, 1, 1)),
    _spec("mlx_strides_contiguous", """
                uint elem = thread_position_in_grid.x;
                T tmp = inp[elem];
                out[elem] = metal::precise::exp(tmp) * threads_per_simdgroup;
            """, [_arr((8, 6))], ["float32"], input_names=["inp"], output_shapes=[[8, 6]], template=_T32,
          name="myexpTrue", grid=(48, 1, 1), threadgroup=(256, 1, 1)),
    _spec("mlx_helper", """
                uint elem = thread_position_in_grid.x;
                out1[elem] = do_exp(a[elem]);
            """, [_arr((2, 2))], ["float32"], input_names=["a"], output_names=["out1"], output_shapes=[[2, 2]],
          header="""
            template <typename T>
            T do_exp(T x) {
                return metal::precise::exp(x);
            }
            """, name="helper", grid=(4, 1, 1), threadgroup=(2, 1, 1)),
    _spec("mlx_attributes", "out[0] = threads_per_threadgroup.x;", [_arr((1, 1))], ["uint32"], input_names=["a"],
          output_shapes=[[1, 1]], name="test_fun", grid=(2, 1, 1), threadgroup=(2, 1, 1)),
    _spec("mlx_caching_0", """
            uint elem = thread_position_in_grid.x;
            out[elem] = 0.0;
        """, [_arr((32,))], ["float32"], input_names=["inp"], output_shapes=[[32]], name="my_kernel",
          grid=(32, 1, 1), threadgroup=(32, 1, 1)),
    _spec("mlx_same_name_a", "uint e = thread_position_in_grid.x; out[e] = inp[e] * 2.0f;", [_arr((32,))],
          ["float32"], input_names=["inp"], output_shapes=[[32]], name="dup_name", grid=(32, 1, 1),
          threadgroup=(32, 1, 1)),
    _spec("mlx_math_mode", """
            uint elem = thread_position_in_grid.x;
            #if defined(__FAST_MATH__) && __FAST_MATH__
            out[elem] = 1.0f;
            #else
            out[elem] = 0.0f;
            #endif
        """, [_arr((4,))], ["float32"], input_names=["inp"], output_shapes=[[4]], name="math_mode",
          grid=(4, 1, 1), threadgroup=(4, 1, 1)),
    _spec("mlx_mixed_dtypes_float16", """
                uint elem = thread_position_in_grid.x;
                out[elem] = inp[elem] + inp[elem];
            """, [_arr((32,), "float16")], ["float16"], input_names=["inp"], output_shapes=[[32]],
          name="mixed_dtypes", grid=(32, 1, 1), threadgroup=(32, 1, 1)),
    _spec("mlx_mixed_dtypes_float32", """
                uint elem = thread_position_in_grid.x;
                out[elem] = inp[elem] + inp[elem];
            """, [_arr((32,), "float32")], ["float32"], input_names=["inp"], output_shapes=[[32]],
          name="mixed_dtypes", grid=(32, 1, 1), threadgroup=(32, 1, 1)),
]


# --------------------------------------------------------------------------- generated cases
def _generated() -> list:
    return _generated_types_and_attributes() + _generated_shapes_outputs_bodies()


def _generated_types_and_attributes() -> list:
    out = []
    body = "uint i = thread_position_in_grid.x;\nout[i] = 0;"
    # Every dtype as an array input (>= 8 elements), a small input, a 0-d input, an output and a template type.
    # Metal has no float64: MLX refuses such arrays, jitkernel too (a template type float64 is written as double).
    for d in DTYPES:
        error = "float64" if d == "float64" else None
        out.append(_spec(f"dtype_{d}_array", body, [_arr((3, 4), d)], [d], error=error))
        out.append(_spec(f"dtype_{d}_small", body, [_arr((5,), d)], ["float32"], error=error))
        out.append(_spec(f"dtype_{d}_0d", body, [_arr((), d)], ["float32"], error=error))
        out.append(_spec(f"dtype_{d}_output", body, [_arr((9,))], [d], error=error))
        out.append(_spec(f"dtype_{d}_template", "out[0] = T(0);", [_arr((9,))], ["float32"],
                         template=[["T", {"dtype": d}]]))
    # Sizes around the constant-address-space limit (8 elements), empty and many-dimensional arrays.
    for shape in [(0,), (1,), (7,), (8,), (9,), (2, 3), (2, 4), (3, 0, 5), (1,) * 9, (2,) * 10, (100,),
                  (1024, 1024), (1, 1, 7), (8, 1)]:
        sid = "x".join(map(str, shape)) or "0d"
        out.append(_spec(f"size_{sid}", "out[0] = in0_ndim;", [_arr(shape)], ["float32"]))
    # Python scalars (MLX: bool, int32 / int64 when out of range, float32) next to arrays.
    for sid, value in [("float", 1.5), ("int", 3), ("negint", -7), ("bigint", 2**40), ("bool", True),
                       ("false", False), ("zero", 0)]:
        out.append(_spec(f"scalar_{sid}", "out[0] = in1 + in0[0];", [_arr((10,)), {"scalar": value}], ["float32"]))
    out.append(_spec("scalars_only", "out[0] = a + b + c;", [{"scalar": 1.0}, {"scalar": 2}, {"scalar": False}],
                     ["float32"], input_names=["a", "b", "c"]))
    # Template arguments: ints (negative and extreme ones too), bools, dtypes, mixed.
    templates = {
        "int": [["N", 3]], "zero": [["N", 0]], "neg": [["N", -3]], "negone": [["N", -1]],
        "int32_max": [["N", 2**31 - 1]], "int32_min": [["N", -2**31]], "true": [["B", True]],
        "false": [["B", False]], "dtype": _T32,
        "mixed": [["T", {"dtype": "float16"}], ["N", -12], ["B", True], ["U", {"dtype": "uint8"}], ["M", 7],
                  ["C", False]],
        "many_ints": [[f"N{i}", i - 5] for i in range(10)],
        "bools": [["A", True], ["B", False], ["C", True]],
    }
    for tid, t in templates.items():
        out.append(_spec(f"template_{tid}", "out[0] = 1;", [_arr((16,))], ["float32"], template=t))
    out.append(_spec("template_empty_list", "out[0] = 1;", [_arr((16,))], ["float32"], template=[]))
    # Each Metal attribute alone, all of them, and some pairs.
    for attr, _ in ATTRIBUTES:
        if attr.startswith("dispatch_"):
            continue  # deliberate differences (below): MLX also adds the attribute whose name ends theirs
        out.append(_spec(f"attr_{attr}", f"out[0] = {attr}{'.x' if _ == 'uint3' else ''};", [_arr((16,))],
                         ["float32"]))
    all_attrs = " + ".join(f"{a}{'.x' if t == 'uint3' else ''}" for a, t in ATTRIBUTES)
    out.append(_spec("attr_all", f"out[0] = {all_attrs};", [_arr((16,))], ["float32"]))
    out.append(_spec("attr_none", "out[0] = 1;", [_arr((16,))], ["float32"]))
    out.append(_spec("attr_in_comment", "// thread_position_in_grid is not used\nout[0] = 1;", [_arr((16,))],
                     ["float32"]))
    out.append(_spec("attr_reverse_order", "out[threads_per_grid.x] = grid_origin.x + thread_execution_width;",
                     [_arr((16,))], ["float32"]))
    return out


def _generated_shapes_outputs_bodies() -> list:
    out = []
    # name_shape / name_strides / name_ndim: every subset, on one and on several inputs.
    for use in itertools.product([False, True], repeat=3):
        parts = [p for p, u in zip(["in0_shape[0]", "in0_strides[0]", "in0_ndim"], use) if u] or ["1"]
        sid = "".join("y" if u else "n" for u in use)
        out.append(_spec(f"shape_use_{sid}", f"uint i = thread_position_in_grid.x;\nout[i] = {' + '.join(parts)};",
                         [_arr((4, 5))], ["float32"]))
        out.append(_spec(f"shape_use_noattr_{sid}", f"out[0] = {' + '.join(parts)};", [_arr((4, 5))], ["float32"]))
    out.append(_spec("shape_multi_inputs", "out[0] = a_shape[0] + b_strides[1] + c_ndim + d[0];",
                     [_arr((4, 5)), _arr((2, 3, 4), "int32"), _arr((6,), "float16"), _arr((3,), "uint8")],
                     ["float32"], input_names=["a", "b", "c", "d"]))
    out.append(_spec("shape_small_input", "out[0] = a_shape[0] + a_strides[0] + a_ndim;", [_arr((2, 2))],
                     ["float32"], input_names=["a"]))
    out.append(_spec("shape_in_comment_0d", "// a_shape is not available for a 0-d input\nout[0] = a;",
                     [_arr(())], ["float32"], input_names=["a"]))
    # Outputs: several, atomic, with attributes after them.
    for n in (1, 2, 3):
        dts = ["float32", "int32", "uint32"][:n]
        out.append(_spec(f"outputs_{n}", "uint i = thread_position_in_grid.x;\n" +
                         "\n".join(f"out{j}[i] = 0;" for j in range(n)), [_arr((16,))], dts,
                         output_names=[f"out{j}" for j in range(n)]))
        out.append(_spec(f"outputs_{n}_noattr", "\n".join(f"out{j}[0] = 0;" for j in range(n)), [_arr((16,))], dts,
                         output_names=[f"out{j}" for j in range(n)]))
        out.append(_spec(f"outputs_{n}_atomic", "uint i = thread_position_in_grid.x;\n" + "\n".join(
            f"atomic_fetch_add_explicit(&out{j}[i], 1, memory_order_relaxed);" for j in range(n)),
            [_arr((16,))], ["float32", "int32", "uint32"][:n], output_names=[f"out{j}" for j in range(n)],
            atomic_outputs=True, init_value=0))
    out.append(_spec("outputs_2_shape_attr", "uint i = thread_position_in_grid.x;\nout0[i] = in0_shape[0];\n"
                     "out1[i] = 0;", [_arr((16,))], ["float32", "float32"], output_names=["out0", "out1"]))
    out.append(_spec("no_inputs", "out[thread_position_in_grid.x] = 1;", [], ["float32"], input_names=[]))
    out.append(_spec("no_inputs_noattr", "out[0] = 1;", [], ["float32"], input_names=[]))
    # Headers: with and without a final newline, with templates and helpers; the body verbatim.
    out.append(_spec("header_newline", "out[0] = helper(in0[0]);", [_arr((16,))], ["float32"],
                     header="inline float helper(float x) { return x + 1; }\n"))
    out.append(_spec("header_no_newline", "out[0] = helper(in0[0]);", [_arr((16,))], ["float32"],
                     header="inline float helper(float x) { return x + 1; }"))
    out.append(_spec("header_no_newline_template", "out[0] = helper(in0[0]);", [_arr((16,))], ["float32"],
                     header="inline float helper(float x) { return x + 1; }", template=[["N", 2]]))
    out.append(_spec("header_multiline", "out[0] = scale<N>(in0[0]);", [_arr((16,))], ["float32"],
                     header="#define SCALE 2\n\ntemplate <int K>\nfloat scale(float x) {\n  return x * K * SCALE;\n}\n",
                     template=[["N", 3]]))
    out.append(_spec("body_empty", "", [_arr((16,))], ["float32"]))
    out.append(_spec("body_whitespace", "\n\n   \n", [_arr((16,))], ["float32"]))
    out.append(_spec("body_no_newline", "out[0]=1;", [_arr((16,))], ["float32"]))
    out.append(_spec("body_crlf", "uint i = thread_position_in_grid.x;\r\nout[i] = 1;\r\n", [_arr((16,))],
                     ["float32"]))
    out.append(_spec("body_tabs_unicode", "\t// \u00e9l\u00e9ment \u2192 sortie\n\tout[0] = 1;", [_arr((16,))],
                     ["float32"]))
    out.append(_spec("name_digits", "out[0] = 1;", [_arr((16,))], ["float32"], name="Kernel_2b"))
    out.append(_spec("name_underscores", "out[0] = 1;", [_arr((16,))], ["float32"], name="_my__kernel_"))
    out.append(_spec("names_long", "out_with_a_long_name[0] = input_with_a_long_name[0];", [_arr((16,))],
                     ["float32"], input_names=["input_with_a_long_name"], output_names=["out_with_a_long_name"]))
    # Many inputs and outputs of mixed kinds.
    out.append(_spec("mixed_everything", "uint i = thread_position_in_grid.x;\n"
                     "o0[i] = T(a[i]) + b + c[0] + d_shape[1] + N;\n"
                     "o1[simdgroup_index_in_threadgroup] = e_strides[0] + f;",
                     [_arr((32,), "float16"), {"scalar": 2.5}, _arr((3,), "int64"), _arr((4, 4), "bfloat16"),
                      _arr((2, 2, 2), "uint16"), _arr((), "float32")],
                     ["float32", "int64"], input_names=["a", "b", "c", "d", "e", "f"], output_names=["o0", "o1"],
                     template=[["T", {"dtype": "float32"}], ["N", -4], ["F", False]],
                     header="// helpers would go here\n"))
    out.append(_spec("dict_form_generated", "out[thread_position_in_grid.x] = x[0] + y_shape[0];",
                     [_arr((4,)), _arr((3, 3), "int32")], ["float32"], input_names=["x", "y"], form="dict"))
    return out


# --------------------------------------------------------------------------- deliberate differences from MLX
_DIFFERENCES = [
    _spec("diff_multi_output_shape_no_attr", "out0[0] = in0_shape[0];\nout1[0] = 1;", [_arr((16,))],
          ["float32", "float32"], output_names=["out0", "out1"],
          mlx_differs="MLX closes the parameter list after the first output when shape buffers are present, two or "
                      "more outputs and no attribute: the text does not compile"),
    _spec("diff_multi_output_strides_three", "out0[0] = a_strides[0] + b_ndim;\nout1[0] = 1;\nout2[0] = 2;",
          [_arr((16,)), _arr((2, 8))], ["float32", "int32", "uint8"], input_names=["a", "b"],
          output_names=["out0", "out1", "out2"],
          mlx_differs="MLX's parameter list is malformed (two or more outputs, shape buffers, no attribute)"),
    _spec("diff_substring_shape", "float data_shape = 2;\nout[thread_position_in_grid.x] = a[0] * data_shape;",
          [_arr((16,))], ["float32"], input_names=["a"],
          mlx_differs="MLX matches substrings: 'data_shape' contains 'a_shape', so MLX adds an unused a_shape "
                      "buffer; jitkernel matches whole identifiers"),
    _spec("diff_substring_strides_ndim", "int xa_strides = 1; int ba_ndim = 0;\nout[0] = a[0] + xa_strides + ba_ndim;",
          [_arr((16,))], ["float32"], input_names=["a"],
          mlx_differs="MLX matches substrings ('xa_strides', 'ba_ndim' contain 'a_strides', 'a_ndim')"),
    _spec("diff_dispatch_threads", "out[0] = dispatch_threads_per_threadgroup.x;", [_arr((16,))], ["float32"],
          mlx_differs="MLX matches substrings: 'dispatch_threads_per_threadgroup' contains "
                      "'threads_per_threadgroup', so MLX adds that attribute too"),
    _spec("diff_dispatch_simdgroups", "out[0] = dispatch_simdgroups_per_threadgroup;", [_arr((16,))], ["float32"],
          mlx_differs="MLX matches substrings: 'dispatch_simdgroups_per_threadgroup' contains "
                      "'simdgroups_per_threadgroup', so MLX adds that attribute too"),
    _spec("diff_dispatch_quadgroups", "out[0] = dispatch_quadgroups_per_threadgroup;", [_arr((16,))], ["float32"],
          mlx_differs="MLX matches substrings: 'dispatch_quadgroups_per_threadgroup' contains "
                      "'quadgroups_per_threadgroup', so MLX adds that attribute too"),
    _spec("attr_dispatch_and_plain", "out[0] = dispatch_simdgroups_per_threadgroup + simdgroups_per_threadgroup;",
          [_arr((16,))], ["float32"]),
    _spec("diff_substring_attribute", "uint my_grid_size = 4;\nout[thread_index_in_threadgroup] = my_grid_size;",
          [_arr((16,))], ["float32"],
          mlx_differs="MLX matches substrings: 'my_grid_size' contains 'grid_size', so MLX adds a grid_size "
                      "attribute"),
    _spec("diff_0d_shape", "out[0] = a_shape[0];", [_arr(())], ["float32"], input_names=["a"],
          mlx_differs="MLX declares no a_shape for a 0-d input, so its text cannot compile; jitkernel raises "
                      "ArgumentError", error="a_shape"),
    _spec("diff_scalar_ndim", "out[0] = s_ndim;", [_arr((16,)), {"scalar": 3}], ["float32"],
          input_names=["a", "s"],
          mlx_differs="MLX declares no s_ndim for a scalar input; jitkernel raises ArgumentError", error="s_ndim"),
]

SPECS: list = _DOCUMENTED + _MLX_TESTS + _generated() + _DIFFERENCES
assert len({s["id"] for s in SPECS}) == len(SPECS), "case ids must be unique"


# --------------------------------------------------------------------------- building jitkernel objects
def _dtype(name: str):
    return getattr(jk, "bool_" if name == "bool" else name)


def _np_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype("bool" if name == "bool" else name)


def _input(entry):
    if "scalar" in entry:
        return entry["scalar"]
    # Only dtype and shape matter to code generation: a broadcast view allocates nothing for large shapes.
    return np.broadcast_to(np.zeros((), _np_dtype(entry["dtype"])), tuple(entry["shape"]))


def _template(spec):
    if spec["template"] is None:
        return None
    return [(n, _dtype(v["dtype"]) if isinstance(v, dict) else v) for n, v in spec["template"]]


def make_kernel(spec):
    """The jitkernel kernel object of a spec, in its form."""
    if spec["form"] == "seed002":
        return jk.MetalKernel(
            name=spec["name"], source=spec["source"], grid=tuple(spec["grid"]),
            threadgroup=tuple(spec["threadgroup"]),
            output_shapes={n: tuple(s) for n, s in zip(spec["output_names"], spec["output_shapes"])},
            output_dtypes={n: _dtype(d) for n, d in zip(spec["output_names"], spec["output_dtypes"])},
            ensure_row_contiguous=spec["ensure_row_contiguous"], atomic_outputs=spec["atomic_outputs"],
            header=spec["header"], init_value=spec["init_value"]).template(**dict(_template(spec) or []))
    names = {} if spec["form"] == "dict" else {"input_names": spec["input_names"],
                                               "output_names": spec["output_names"]}
    return jk.metal_kernel(name=spec["name"], source=spec["source"], header=spec["header"],
                           ensure_row_contiguous=spec["ensure_row_contiguous"],
                           atomic_outputs=spec["atomic_outputs"], **names)


def call_kwargs(spec) -> dict:
    """Keyword arguments of a call of ``make_kernel(spec)`` (for seed 002 kernels: the inputs by name)."""
    inputs = [_input(e) for e in spec["inputs"]]
    if spec["form"] == "seed002":
        return dict(zip(spec["input_names"], inputs))
    shapes = [tuple(s) for s in spec["output_shapes"]]
    dtypes = [_dtype(d) for d in spec["output_dtypes"]]
    if spec["form"] == "dict":
        inputs = dict(zip(spec["input_names"], inputs))
        shapes = dict(zip(spec["output_names"], shapes))
        dtypes = dict(zip(spec["output_names"], dtypes))
    return {"inputs": inputs, "output_shapes": shapes, "output_dtypes": dtypes, "grid": tuple(spec["grid"]),
            "threadgroup": tuple(spec["threadgroup"]), "template": _template(spec), "init_value": spec["init_value"]}


def metal_source(kernel, kwargs: dict, with_utils: bool = True) -> str:
    """The Metal source a call with ``kwargs`` generates (with jitkernel's metal_utils preamble by default)."""
    if isinstance(kernel, jk.MetalKernel):
        return kernel.source(with_utils=with_utils, **kwargs)
    return kernel.source(inputs=kwargs["inputs"], output_dtypes=kwargs["output_dtypes"],
                         template=kwargs.get("template"), with_utils=with_utils)


def all_metal_cases() -> list:
    """[(id, kernel, call_kwargs)] for every case jitkernel generates a source for (refused calls left out)."""
    return [(s["id"], make_kernel(s), call_kwargs(s)) for s in SPECS if s["error"] is None]
