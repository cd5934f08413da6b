"""``jk.sharded`` without a GPU: the rules (named and factor strings) resolved and their mistakes reported, and
two CPU ranks (torchrun, gloo) running sharded functions on DTensors through tests/cpu/_dtensor_ranks.py: results
and gradients equal the whole-tensor ones, and placements that do not fit a rule are errors naming the argument."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

import jitkernel as jk
from jitkernel._frameworks import sharding_rules


def test_named_rules_align_with_the_trailing_dimensions():
    f = sharding_rules.resolve("rowwise", (), [3, 1], [3])
    assert f.inputs == (("d0", "d1", "d2"), ("d2",)) and f.outputs == (("d0", "d1", "d2"),)
    assert f.replicated == frozenset({"d2"})
    e = sharding_rules.resolve("elementwise", (), [2, 2], [2])
    assert e.replicated == frozenset() and e.shardy() == "d0 d1, d0 d1 -> d0 d1"


def test_factor_rules_are_checked_against_the_call():
    f = sharding_rules.resolve("i j, j -> i j", ("j",), [2, 1], [2])
    assert f.inputs == (("i", "j"), ("j",)) and f.replicated == frozenset({"j"})
    assert f.factor_size("i", [(6, 8), (8,)]) == 6 and f.factor_size("k", [(6, 8), (8,)]) is None
    assert sharding_rules.resolve("(), i -> i", (), [0, 1], [1]).shardy() == "(), i -> i"
    with pytest.raises(jk.ArgumentError, match="^rule: array argument 0 has 3 dimension"):
        sharding_rules.resolve("i j, j -> i j", (), [3, 1], [2])
    with pytest.raises(jk.ArgumentError, match="^rule: the rule .* describes 2 array argument"):
        sharding_rules.resolve("i j, j -> i j", (), [2], [2])


@pytest.mark.parametrize("rule, replicated, match", [
    ("i j", (), "^rule: expected 'elementwise', 'rowwise' or factors"),
    ("i i -> i", (), "^rule: argument entry 'i i' names a factor twice"),
    ("i, -> i", (), "^rule: an empty argument entry"),
    ("i-j -> i", (), "^rule: 'i-j' is not a factor name"),
    ("i j -> i j", ("k",), "^replicated: factor 'k' is not in the rule"),
    ("rowwise", ("d0",), "^replicated: the named rule 'rowwise'"),
])
def test_bad_rules_are_argument_errors(rule, replicated, match):
    with pytest.raises(jk.ArgumentError, match=match):
        jk.sharded(rule, replicated=replicated)


def test_bad_rule_types_are_argument_type_errors():
    with pytest.raises(jk.ArgumentTypeError, match="^rule: expected"):
        jk.sharded(3)
    with pytest.raises(jk.ArgumentTypeError, match="^replicated: expected a list"):
        jk.sharded("i -> i", replicated=[1])


def test_without_sharded_arrays_it_is_a_plain_call():
    @jk.sharded("elementwise")
    def double(x, scale=2):
        """Doubles."""
        return [v * scale for v in x]

    assert double([1, 2], scale=3) == [3, 6]
    assert double.__doc__ == "Doubles." and double.__name__ == "double"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dtensor_ranks_on_the_cpu(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("torch.distributed.tensor")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_dtensor_ranks.py")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", JK_REPORT_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                           f"--master_port={_free_port()}", script], capture_output=True, text=True, timeout=240,
                          env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for r in reports:
        assert r["passed"] == ["rowwise_forward_backward", "elementwise_uneven_tuple_factors", "compiled"], r
        errors = r["errors"]
        assert errors["rowwise_last_dim_split"].startswith(
            "ArgumentError: inputs: argument 0 ('x') is split along dimension 1"), errors
        assert "keeps whole" in errors["rowwise_last_dim_split"]
        assert errors["weight_split"].startswith("ArgumentError: inputs: argument 1 ('w') is split"), errors
        assert errors["different_factors"].startswith("ArgumentError: inputs: argument 1 ('b') splits dimension 1")
        assert errors["partial"].startswith("ArgumentError: inputs: argument 0 ('x') is Partial"), errors
        assert errors["contracted_factor"].startswith("ArgumentError: inputs: argument 0 ('a') is split"), errors
        assert errors["rule_arity"].startswith("ArgumentError: rule: the rule 'i j, j k -> i k' describes 2"), errors
        kernel_error = errors["kernel_given_dtensor"]
        assert kernel_error.startswith("ArgumentTypeError: inputs: input 'src' of kernel 'plain_copy' is a DTensor")
        assert "@jk.sharded" in kernel_error and "src.to_local()" in kernel_error
