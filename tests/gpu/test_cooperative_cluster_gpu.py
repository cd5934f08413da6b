"""Cooperative and cluster launches, kernel.attributes() and __cuda_array_interface__ inputs on a GPU: a grid-wide
sync over the largest co-resident grid (from the occupancy API) sums correctly and one threadgroup more is the
ArgumentError naming that maximum; a distributed-shared-memory reduction across a cluster matches NumPy; the
attributes equal what CuPy reads from the same cubin; Numba arrays (only __cuda_array_interface__) are inputs."""
import os
import tempfile

import numpy as np
import pytest

import jitkernel as jk

from _gpu_util import to_numpy

pytestmark = pytest.mark.gpu

GRID_SUM = """
auto grid = cg::this_grid();
__shared__ float part[256];
unsigned t = threadIdx.x;
float s = 0.f;
for (size_t i = grid.thread_rank(); i < a_shape[0]; i += grid.size()) s += a[i];
part[t] = s;
__syncthreads();
for (unsigned k = blockDim.x / 2; k > 0; k /= 2) { if (t < k) part[t] += part[t + k]; __syncthreads(); }
if (t == 0) partial[blockIdx.x] = part[0];
grid.sync();
if (grid.thread_rank() == 0) { float total = 0.f; for (unsigned b = 0; b < gridDim.x; ++b) total += partial[b];
  out[0] = total; }
"""


def test_grid_sync_over_maximal_grid():
    k = jk.cuda_kernel("grid_sum", ["a"], ["partial", "out"], GRID_SUM)
    a = np.random.default_rng(0).random(1 << 20, dtype=np.float32)
    attrs = k.attributes(inputs=[a], output_dtypes=[np.float32, np.float32], threadgroup=(256, 1, 1))
    blocks = attrs["active_blocks_per_sm"] * attrs["multiprocessor_count"]
    assert blocks > 0
    partial, out = k(inputs=[a], output_shapes=[(blocks,), (1,)], output_dtypes=[np.float32, np.float32],
                     grid=(blocks * 256, 1, 1), threadgroup=(256, 1, 1))
    np.testing.assert_allclose(to_numpy(out)[0], a.astype(np.float64).sum(), rtol=1e-4)
    with pytest.raises(jk.ArgumentError, match=f"is {blocks} threadgroups") as e:
        k(inputs=[a], output_shapes=[(blocks + 1,), (1,)], output_dtypes=[np.float32, np.float32],
          grid=((blocks + 1) * 256, 1, 1), threadgroup=(256, 1, 1))
    assert e.value.argument == "grid"


CLUSTER_SUM = """
auto cluster = cg::this_cluster();
__shared__ float part[128];
unsigned t = threadIdx.x;
part[t] = a[blockIdx.x * blockDim.x + t];
__syncthreads();
for (unsigned k = blockDim.x / 2; k > 0; k /= 2) { if (t < k) part[t] += part[t + k]; __syncthreads(); }
cluster.sync();
if (cluster.block_rank() == 0 && t == 0) {
  float total = 0.f;
  for (unsigned r = 0; r < cluster.num_blocks(); ++r) total += *cluster.map_shared_rank(&part[0], r);
  out[blockIdx.x / cluster.num_blocks()] = total;
}
cluster.sync();
"""


@pytest.mark.parametrize("size", [2, 4, 8, 16])
def test_cluster_dsm_reduction(size):
    k = jk.cuda_kernel("cluster_sum", ["a"], ["out"], CLUSTER_SUM)
    clusters = 64
    a = np.random.default_rng(size).random(clusters * size * 128, dtype=np.float32)
    (out,) = k(inputs=[a], output_shapes=[(clusters,)], output_dtypes=[np.float32], grid=(a.size, 1, 1),
               threadgroup=(128, 1, 1), cluster=(size, 1, 1))
    np.testing.assert_allclose(to_numpy(out), a.reshape(clusters, -1).sum(axis=1), rtol=1e-5)


def test_attributes_match_cupy():
    cupy = pytest.importorskip("cupy")
    k = jk.cuda_kernel("grid_sum", ["a"], ["partial", "out"], GRID_SUM)
    a = np.zeros(1024, np.float32)
    sig = dict(inputs=[a], output_dtypes=[np.float32, np.float32])
    ours = k.attributes(**sig, threadgroup=(256, 1, 1))
    arch = jk.device_info(0)["arch"]
    cubin = k.compile(**sig, arch=arch)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        theirs = cupy.RawModule(path=path).get_function(k.entry_name(**sig))
        assert ours["registers_per_thread"] == theirs.num_regs
        assert ours["static_shared_memory"] == theirs.shared_size_bytes
        assert ours["local_memory_per_thread"] == theirs.local_size_bytes
        assert ours["max_threads_per_block"] == theirs.max_threads_per_block
    assert ours["static_shared_memory"] >= 1024
    assert 0 < ours["occupancy"] <= 1


def test_numba_cai_inputs_and_outputs():
    cuda = pytest.importorskip("numba.cuda")
    k = jk.cuda_kernel("twice", ["a"], ["out"], "size_t i = threadIdx.x + blockIdx.x * (size_t)blockDim.x;"
                                                "if (i < a_shape[0]) out[i] = 2 * a[i];")
    host = np.arange(1000, dtype=np.float32)
    a = cuda.to_device(host)
    out = cuda.device_array(1000, np.float32)
    k(inputs=[a], outputs=[out], output_shapes=[(1000,)], output_dtypes=[np.float32], grid=(1000, 1, 1),
      threadgroup=(128, 1, 1))
    jk.synchronize()
    np.testing.assert_array_equal(out.copy_to_host(), 2 * host)
    strided = cuda.to_device(np.arange(2000, dtype=np.float32))[::2]  # non-contiguous: copied to contiguous
    (res,) = k(inputs=[strided], output_shapes=[(1000,)], output_dtypes=[np.float32], grid=(1000, 1, 1),
               threadgroup=(128, 1, 1))
    np.testing.assert_array_equal(to_numpy(res), 2 * np.arange(0, 2000, 2, dtype=np.float32))
