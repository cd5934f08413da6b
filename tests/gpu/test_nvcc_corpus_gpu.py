"""Each kernel of tests/corpus/nvcc_style runs unchanged on the GPU and matches its NumPy reference within the
tolerances its module states."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "corpus" / "nvcc_style"))
import _load  # noqa: E402

pytestmark = pytest.mark.gpu

CALL_KEYS = ("inputs", "template", "grid", "threadgroup", "output_shapes", "output_dtypes", "init_value")


@pytest.mark.parametrize("name", _load.names())
def test_corpus_kernel_matches_numpy(name):
    kernel, case = _load.kernel_and_case(name)
    outs = kernel(**{k: case[k] for k in CALL_KEYS if k in case})
    assert len(outs) == len(case["expected"])
    for out, ref in zip(outs, case["expected"]):
        got = np.asarray(out)
        assert got.shape == tuple(np.shape(ref))
        np.testing.assert_allclose(got.astype(np.complex128 if np.iscomplexobj(got) else np.float64),
                                   np.asarray(ref), rtol=case["rtol"], atol=case["atol"])
