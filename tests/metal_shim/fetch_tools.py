"""Downloads the headers the clang checks of the Metal backend need on Linux (docs/metal.md), once, into
build/metal-check/ of the checkout (ignored by git): metal-cpp, from the mlx-metal macOS wheel of the MLX version
the codegen tests compare with, and nanobind's headers. Prints the shell lines that point the tests at them.
.ci/run runs it; so can you:  python tests/metal_shim/fetch_tools.py  (clang >= 16 comes from your distribution).
"""
from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "build" / "metal-check"

# folder under ROOT: (requirement, extra `pip download` arguments, folder inside the wheel to extract)
WANTED = {
    "metal-cpp": ("mlx-metal==0.32.4", ["--platform", "macosx_14_0_arm64"], "mlx/include/metal_cpp/"),
    "nanobind": ("nanobind>=2.4", [], "nanobind/include/"),
}
VARIABLES = {"metal-cpp": "JITKERNEL_METAL_CPP_DIR", "nanobind": "JITKERNEL_NANOBIND_DIR"}


def fetch(name: str, requirement: str, extra: list, prefix: str) -> Path:
    dest = ROOT / name
    if dest.is_dir():
        return dest
    partial = ROOT / f"{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        *extra, "--dest", tmp, requirement], check=True)
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
            if not members:
                sys.exit(f"{wheel.name} has no {prefix} folder")
            for member in members:
                target = partial / member.filename[len(prefix):]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(member))
    partial.rename(dest)  # complete folders only: an interrupted run starts again
    return dest


def main() -> None:
    ROOT.mkdir(parents=True, exist_ok=True)
    for name, (requirement, extra, prefix) in WANTED.items():
        print(f"export {VARIABLES[name]}={shlex.quote(str(fetch(name, requirement, extra, prefix)))}")


if __name__ == "__main__":
    main()
