"""The vendored official headers (cpp/third_party/): each is the exact file its README names (SHA-256), its version
macros say the version the README and the folder's index state, its LICENSE lies beside it, the XLA handler reports
the vendored FFI API version, and no DLPack or XLA FFI struct is declared by hand anywhere else in the C++ sources
(hand-typed copies of those structs, which these headers replaced, needed an audit at every upstream revision).
The scan for hand declarations has its own tests on synthetic text, so that a scan that finds nothing cannot pass
for a clean tree."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CPP = REPO / "cpp"
THIRD_PARTY = CPP / "third_party"
# folder -> (header under the include root, its version macros, the project's name in the README's Version line)
VENDORED = {
    "dlpack": ("dlpack/dlpack.h", ("DLPACK_MAJOR_VERSION", "DLPACK_MINOR_VERSION"), "DLPack"),
    "xla": ("xla/ffi/api/c_api.h", ("XLA_FFI_API_MAJOR", "XLA_FFI_API_MINOR"), "XLA FFI API"),
}
# C++ sources of the repository itself, where no copy of a vendored struct may be typed out.
SCANNED_ROOTS = [CPP, REPO / "benchmarks" / "cpp", REPO / "tests" / "cpp_api"]
CPP_SUFFIXES = {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"}

# Fields only a DLPack or XLA FFI struct declares: every XLA FFI struct starts with struct_size and
# extension_start; DLTensor has byte_offset; the managed tensors have manager_ctx and dl_tensor; the exchange API's
# header has prev_api.
_SIGNATURE_FIELD = re.compile(r"\b(struct_size|extension_start|byte_offset|manager_ctx|dl_tensor|prev_api)\s*;")
_STRUCT_HEAD = re.compile(r"\b(?:struct|class)\s+(\w+)[^;{()]*\{")
# The vendored headers' own names, declared or defined again, and their macros, defined again.
_UPSTREAM_NAME = re.compile(r"\b(?:struct|enum|union)\s+(XLA_FFI_\w+|DL[A-Z]\w*)\b|\}\s*(XLA_FFI_\w+|DL[A-Z]\w*)\s*;")
_UPSTREAM_MACRO = re.compile(r"^\s*#\s*define\s+(XLA_FFI_\w+|DLPACK_\w+)", re.M)


def readme_field(folder: str, field: str) -> str:
    text = (THIRD_PARTY / folder / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"^- {re.escape(field)}: (.+)$", text, re.M)
    assert match, f"cpp/third_party/{folder}/README.md has no '- {field}:' line"
    return match.group(1).strip()


def header_version(folder: str) -> tuple[int, int]:
    header, macros, _ = VENDORED[folder]
    text = (THIRD_PARTY / header).read_text(encoding="utf-8")
    values = []
    for macro in macros:
        match = re.search(rf"^#define {macro} (\d+)\s*$", text, re.M)
        assert match, f"{header} defines no {macro}"
        values.append(int(match.group(1)))
    return values[0], values[1]


def _struct_body(text: str, open_brace: int) -> str:
    depth = 0
    for i in range(open_brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[open_brace + 1:i]
    return text[open_brace + 1:]


def _without_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def hand_declarations(text: str) -> list[str]:
    """What in C++ `text` copies a vendored header: a struct declaring a DLPack/XLA FFI signature field, one of the
    headers' own struct or enum names declared again, or one of their macros defined again."""
    text = _without_comments(text)
    found = []
    for head in _STRUCT_HEAD.finditer(text):
        fields = sorted(set(_SIGNATURE_FIELD.findall(_struct_body(text, head.end() - 1))))
        if fields:
            found.append(f"struct {head.group(1)} declares {', '.join(fields)}")
    found += [f"declares {tag or typedef}" for tag, typedef in _UPSTREAM_NAME.findall(text)]
    found += [f"defines {name}" for name in _UPSTREAM_MACRO.findall(text)]
    return found


def repository_sources() -> list[Path]:
    files = []
    for root in SCANNED_ROOTS:
        files += [p for p in root.rglob("*") if p.suffix in CPP_SUFFIXES and THIRD_PARTY not in p.parents]
    return sorted(files)


@pytest.mark.parametrize("folder", sorted(VENDORED))
def test_header_is_the_copy_the_readme_names(folder):
    header = THIRD_PARTY / VENDORED[folder][0]
    assert hashlib.sha256(header.read_bytes()).hexdigest() == readme_field(folder, "SHA-256"), (
        f"{header.relative_to(REPO)} differs from the copy its README records: vendored headers are copied "
        "unmodified; an update rewrites the README's Version and SHA-256 lines (see its 'Updating' section)")


@pytest.mark.parametrize("folder", sorted(VENDORED))
def test_readme_states_the_headers_version(folder):
    major, minor = header_version(folder)
    assert readme_field(folder, "Version") == f"{VENDORED[folder][2]} {major}.{minor}"


@pytest.mark.parametrize("folder", sorted(VENDORED))
def test_licence_lies_beside_the_header(folder):
    text = (THIRD_PARTY / folder / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text


def test_wheel_ships_each_vendored_licence():
    # pyproject.toml's project.license-files (PEP 639): the build copies each match, path kept, to .dist-info/licenses/.
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    table = re.search(r"^\[project\]\n(.*?)(?=^\[|\Z)", pyproject, re.M | re.S).group(1)
    setting = re.search(r"^license-files\s*=\s*(.+)$", table, re.M)  # a list on one line
    assert setting, "pyproject.toml sets no project.license-files"
    shipped = {path for pattern in re.findall(r'"([^"]+)"', setting.group(1)) for path in REPO.glob(pattern)}
    assert REPO / "LICENSE" in shipped
    for folder in VENDORED:
        assert THIRD_PARTY / folder / "LICENSE" in shipped, f"the wheel leaves out cpp/third_party/{folder}/LICENSE"


def test_index_lists_each_vendored_header_and_version():
    index = (THIRD_PARTY / "README.md").read_text(encoding="utf-8")
    assert {p.name for p in THIRD_PARTY.iterdir() if p.is_dir()} == set(VENDORED)
    for folder, (header, _, _) in VENDORED.items():
        row = next((line for line in index.splitlines() if line.startswith(f"| `{header}` |")), None)
        assert row is not None, f"cpp/third_party/README.md has no row for {header}"
        major, minor = header_version(folder)
        assert f" {major}.{minor} |" in row, row


def test_xla_handler_reports_the_vendored_api_version():
    from jitkernel import _core

    major, minor, traits = _core._xla_metadata()
    assert (major, minor) == header_version("xla")
    assert traits == 1  # XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE


def test_no_dlpack_or_xla_ffi_struct_is_declared_by_hand():
    files = repository_sources()
    assert CPP / "bindings" / "call" / "dlpack.hpp" in files and CPP / "jitkernel" / "xla" / "ffi_abi.hpp" in files
    found = [f"{p.relative_to(REPO)}: {what}" for p in files
             for what in hand_declarations(p.read_text(encoding="utf-8", errors="replace"))]
    assert not found, ("DLPack / XLA FFI declarations outside cpp/third_party (use the vendored headers' types):\n"
                       + "\n".join(found))


def test_the_vendored_headers_are_included_only_through_their_wrappers():
    wrappers = {"dlpack/dlpack.h": CPP / "bindings" / "call" / "dlpack.hpp",
                "xla/ffi/api/c_api.h": CPP / "jitkernel" / "xla" / "ffi_abi.hpp"}
    include = re.compile(r'^\s*#\s*include\s+["<]([^">]+)[">]', re.M)
    for path in repository_sources():
        for name in include.findall(path.read_text(encoding="utf-8", errors="replace")):
            if name in wrappers:
                assert path == wrappers[name], f"{path.relative_to(REPO)} includes {name} directly"


# --- the scan on synthetic text ----------------------------------------------------------------------------------

def test_scan_flags_a_hand_typed_xla_struct():
    text = "namespace abi {\nstruct Buffer {\n  std::size_t struct_size;\n  ExtensionBase* extension_start;\n" \
           "  int dtype;\n};\n}\n"
    assert hand_declarations(text) == ["struct Buffer declares extension_start, struct_size"]


def test_scan_flags_a_hand_typed_dlpack_struct():
    text = "struct ManagedTensorVersioned {  // capsule\n  Version version;\n  void* manager_ctx;\n" \
           "  void (*deleter)(ManagedTensorVersioned*);\n  std::uint64_t flags;\n  Tensor dl_tensor;\n};\n"
    assert hand_declarations(text) == ["struct ManagedTensorVersioned declares dl_tensor, manager_ctx"]


def test_scan_flags_upstream_names_and_macros():
    text = "typedef struct DLTensor DLTensor;\nstruct XLA_FFI_CallFrame;\n#define XLA_FFI_API_MINOR 4\n" \
           "  #  define DLPACK_MAJOR_VERSION 1\n"
    assert hand_declarations(text) == ["declares DLTensor", "declares XLA_FFI_CallFrame",
                                       "defines XLA_FFI_API_MINOR", "defines DLPACK_MAJOR_VERSION"]


def test_scan_passes_uses_aliases_and_comments():
    text = ('#include "xla/ffi/api/c_api.h"\nusing Buffer = XLA_FFI_Buffer;\n'
            "// struct Old { std::size_t struct_size; };\n/* struct Older { void* manager_ctx; }; */\n"
            "struct ExportContext {\n  std::shared_ptr<Buffer> buffer;\n  dlpack::ManagedTensor plain{};\n};\n"
            "void f(const abi::Buffer* b) { if (b->struct_size < kBufferSize) return; t.dl_tensor = x; }\n")
    assert hand_declarations(text) == []


def test_scan_reads_the_vendored_headers_as_copies():
    # The scan recognises the real thing: run over the vendored headers, it flags their structs and macros.
    for header, _, _ in VENDORED.values():
        assert hand_declarations((THIRD_PARTY / header).read_text(encoding="utf-8"))
