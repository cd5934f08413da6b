"""The toolkit search's fast path: NVIDIA's wheels found where cuda-pathfinder looks first, without importing it
(which costs tens of milliseconds of a first call), giving the files cuda-pathfinder gives, and stepping aside
(None: the full search) whenever the answer is not unambiguous."""
import os
import subprocess
import sys

import pytest

from jitkernel import _toolkit_search as ts


def _layout(site, cuda13=True, headers=True):
    lib, cudart, cccl = ts._WHEEL_LAYOUTS[0 if cuda13 else 1]
    lib = site / "nvidia" / lib
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"\x7fELF")
    (lib.parent / lib.name.replace("libnvrtc", "libnvrtc-builtins").replace(".so.13", ".so.13.0")
     .replace(".so.12", ".so.12.8")).write_bytes(b"\x7fELF")
    if headers:
        (site / "nvidia" / cudart).mkdir(parents=True, exist_ok=True)
        (site / "nvidia" / cudart / "cuda_fp16.h").write_text("")
        std = site / "nvidia" / cccl / "cuda" / "std"
        std.mkdir(parents=True, exist_ok=True)
        (std / "version").write_text("")
    return str(lib), str(site / "nvidia" / cudart), str(site / "nvidia" / cccl)


@pytest.fixture
def sites(tmp_path, monkeypatch):
    pytest.importorskip("cuda.pathfinder")
    folders = [tmp_path / "a", tmp_path / "b"]
    monkeypatch.setattr(ts, "_site_folders", lambda: [str(f) for f in folders])
    for var in ("JITKERNEL_NVRTC_PATH", "JITKERNEL_NO_PATHFINDER", "JITKERNEL_INCLUDE_PATH"):
        monkeypatch.delenv(var, raising=False)
    return folders


@pytest.mark.parametrize("cuda13", [True, False])
def test_one_wheel_layout_is_the_answer(sites, cuda13):
    lib, cudart, cccl = _layout(sites[1], cuda13=cuda13)
    tk = ts._wheel_toolkit([])
    assert tk.nvrtc_library == lib and tk.include_dirs == [cudart, cccl]
    assert tk.nvrtc_preload and "builtins" in tk.nvrtc_preload[0]
    assert "site-packages" in tk.nvrtc_found_via


def test_an_nvrtc_already_loaded_is_used(sites):
    _, cudart, cccl = _layout(sites[0])
    tk = ts._wheel_toolkit([("/opt/other/libnvrtc.so.13", "identity")])
    assert tk.nvrtc_library == "/opt/other/libnvrtc.so.13" and "already-loaded" in tk.nvrtc_found_via
    assert tk.include_dirs == [cudart, cccl]


def test_include_path_comes_first(sites, monkeypatch, tmp_path):
    _, cudart, cccl = _layout(sites[0])
    monkeypatch.setenv("JITKERNEL_INCLUDE_PATH", str(tmp_path))
    assert ts._wheel_toolkit([]).include_dirs == [str(tmp_path), cudart, cccl]


@pytest.mark.parametrize("case", ["two layouts", "two folders", "no headers", "nothing", "two loaded",
                                  "JITKERNEL_NVRTC_PATH", "JITKERNEL_NO_PATHFINDER"])
def test_anything_ambiguous_takes_the_full_search(sites, monkeypatch, case):
    loaded = []
    if case == "two layouts":
        _layout(sites[0], cuda13=True)
        _layout(sites[0], cuda13=False)
    elif case == "two folders":
        _layout(sites[0])
        _layout(sites[1])
    elif case == "no headers":
        _layout(sites[0], headers=False)
    elif case == "two loaded":
        _layout(sites[0])
        loaded = [("/x/libnvrtc.so.13", "1"), ("/y/libnvrtc.so.12", "2")]
    elif case.startswith("JITKERNEL"):
        _layout(sites[0])
        monkeypatch.setenv(case, "1")
    assert ts._wheel_toolkit(loaded) is None


def test_same_files_as_cuda_pathfinder_without_importing_it():
    """In a fresh process with the real site-packages: search() does not import cuda-pathfinder, and finds what
    cuda-pathfinder finds."""
    pytest.importorskip("cuda.pathfinder")
    code = ("import sys, json; from jitkernel import _toolkit_search as ts; tk = ts.search();"
            "imported = 'cuda.pathfinder' in sys.modules; import cuda.pathfinder as p;"
            "print(json.dumps([imported, tk.nvrtc_found_via, tk.nvrtc_library, tk.include_dirs,"
            " p.load_nvidia_dynamic_lib('nvrtc').abs_path,"
            " [p.locate_nvidia_header_directory(n).abs_path for n in ('cudart', 'cccl')]]))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JITKERNEL_")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    import json
    imported, via, library, includes, pf_library, pf_includes = json.loads(proc.stdout.splitlines()[-1])
    if via != ts._WHEEL_VIA:
        pytest.skip(f"no single NVIDIA wheel layout here (found via {via})")
    assert not imported
    assert os.path.realpath(library) == os.path.realpath(pf_library)
    assert [os.path.realpath(d) for d in includes] == [os.path.realpath(d) for d in pf_includes]


def test_one_folder_named_twice_is_one_layout(sites, tmp_path, monkeypatch):
    lib, cudart, cccl = _layout(sites[0])
    os.symlink(sites[0], tmp_path / "lib64")  # venvs link lib64 -> lib: two names of one site folder
    monkeypatch.setattr(ts, "_site_folders", lambda: [str(sites[0]), str(tmp_path / "lib64")])
    assert ts._wheel_toolkit([]).nvrtc_library == lib


def test_one_loaded_library_under_two_paths_is_one(sites):
    _layout(sites[0])
    tk = ts._wheel_toolkit([("/a/libnvrtc.so.13", "same"), ("/b/libnvrtc.so.13", "same")])
    assert tk is not None and "already-loaded" in tk.nvrtc_found_via


def _cccl_root(tmp_path):
    std = tmp_path / "cuda_root" / "include" / "cccl" / "cuda" / "std"
    std.mkdir(parents=True)
    (std / "version").write_text("")
    return tmp_path / "cuda_root"


def test_without_the_cccl_wheel_cccl_comes_from_the_cuda_root(sites, tmp_path, monkeypatch):
    lib, cudart, cccl = _layout(sites[0])
    import shutil
    shutil.rmtree(cccl)
    root = _cccl_root(tmp_path)
    monkeypatch.setenv("CUDA_HOME", str(root))
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    tk = ts._wheel_toolkit([])
    assert tk.include_dirs == [cudart, str(root / "include" / "cccl")]
    assert tk.include_found_via[1] == f"CUDA toolkit {root}"
    monkeypatch.setenv("CONDA_PREFIX", str(tmp_path))  # conda comes before the CUDA roots: the full search decides
    assert ts._wheel_toolkit([]) is None
