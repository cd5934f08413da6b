"""Cache bundles: ``jk.export_cache`` / ``jk.import_cache`` and ``python -m jitkernel cache export|import``. A round
trip gives identical entry files (through the cache's own store, or ``into=`` a folder laid out as a read-only
tier); hostile bundles (names that are paths, absolute or not entry names, a huge declared size, a truncated or
extended file, bad checksums of an entry, the manifest or the file, another version, duplicate names, a valid
checksum over an entry that is not one) are refused with a BundleError saying what was wrong, and nothing is
written. Files are never written through a link planted at a temp name, nor blocked by what a killed import with our
pid left; a sparse bundle declaring hundreds of megabytes is imported with bounded memory (measured in a child
process); an entry changed between the check and the write is never written.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import subprocess
import sys

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core
from jitkernel._fleet import bundle as _bundle


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """Points the compile cache at a fresh folder; returns a function that points it at another."""
    def use(folder):
        monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(folder))
        _core._cache_reset()
        return folder

    use(tmp_path / "cache")
    yield use
    monkeypatch.undo()
    _core._cache_reset()
    _core._cache_predict_temp_tokens("", 0)  # Predicted's names for the core's temp files, if any are left


def fill(n: int = 3) -> None:
    """Compiles n kernels for two archs into the current cache (2n entries)."""
    for i in range(n):
        k = jk.cuda_kernel(name="k", input_names=["a"], output_names=["b"], source=f"b[0] = a[0] * {i + 1};")
        for arch in ("sm_80", "sm_90a"):
            k.compile(inputs=[np.zeros(2, np.float32)], output_dtypes=[jk.float32], arch=arch)


def entries(folder) -> dict:  # binaries (.jkc) and their serving aliases (.jka)
    return {p.name: p.read_bytes() for p in sorted((folder / "kernels").glob("*.jk[ca]"))}


def test_round_trip_through_the_cache_and_into_a_folder(cache, tmp_path):
    source = cache(tmp_path / "source")
    fill()
    bundle = tmp_path / "kernels.jkbundle"
    report = jk.export_cache(bundle)
    assert report.entries == 6 and report.bytes == sum(len(d) for d in entries(source).values())
    assert report.aliases == 6  # each compiled binary's serving alias travels with it
    target = cache(tmp_path / "target")
    before = jk.cache_info()
    report = jk.import_cache(bundle)
    assert (report.entries, report.aliases, report.stored, report.jitkernel) == (6, 6, 6, jk.__version__)
    assert entries(target) == entries(source)
    assert jk.cache_info().stores - before.stores == 6
    tier = tmp_path / "tier"
    assert jk.import_cache(bundle, into=tier).stored == 6
    assert entries(tier) == entries(source)
    assert not stat.S_IMODE(os.stat(tier / "kernels").st_mode) & 0o022
    assert all(not stat.S_IMODE(p.stat().st_mode) & 0o022 for p in (tier / "kernels").iterdir())


def test_export_chosen_keys_and_other_folders(cache, tmp_path):
    source = cache(tmp_path / "source")
    fill(2)
    names = sorted(name for name in entries(source) if name.endswith(".jkc"))
    bundle = tmp_path / "some.jkbundle"
    report = jk.export_cache(bundle, keys=[names[0][:64], names[1]])
    assert (report.entries, report.aliases) == (2, 2)  # with the serving aliases naming the two
    cache(tmp_path / "other")
    assert jk.export_cache(tmp_path / "all.jkbundle", directory=source).entries == 4
    assert jk.export_cache(tmp_path / "none.jkbundle").entries == 0  # an empty cache exports an empty bundle
    assert jk.import_cache(tmp_path / "none.jkbundle").entries == 0
    with pytest.raises(jk.ArgumentError, match="keys"):
        jk.export_cache(bundle, keys=["0" * 64], directory=source)
    with pytest.raises(jk.ArgumentError, match="keys"):
        jk.export_cache(bundle, keys=["../../etc/passwd"])
    (source / "kernels" / names[2]).write_bytes(b"damaged")  # a damaged entry is left out
    assert jk.export_cache(tmp_path / "rest.jkbundle", directory=source).entries == 3


def build(members, *, version=1, magic=_bundle.MAGIC, manifest=None, total=None, tamper=None) -> bytes:
    """A bundle of (name, bytes) members written by hand, with one thing changed."""
    listing = manifest if manifest is not None else {
        "format": 1, "jitkernel": jk.__version__, "total_bytes": sum(len(d) for _, d in members) if total is None
        else total, "entries": [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                                for n, d in members]}
    text = json.dumps(listing).encode()
    head = struct.pack("<8sII", magic, version, len(text)) + text
    body = head + hashlib.sha256(head).digest() + b"".join(d for _, d in members)
    data = body + hashlib.sha256(body).digest()
    return tamper(data) if tamper else data


@pytest.fixture
def good(cache, tmp_path):
    """(members of a valid bundle, the folder to import into)."""
    cache(tmp_path / "source")
    fill(2)
    members = sorted(entries(tmp_path / "source").items())
    cache(tmp_path / "target")
    return members


def flip(offset):
    def change(data):
        at = offset % len(data)
        return data[:at] + bytes([data[at] ^ 1]) + data[at + 1:]
    return change


def renamed(members, name):
    return [(name, members[0][1])] + members[1:]


HOSTILE = {
    "traversal": (lambda m: build(renamed(m, "../" + m[0][0])), "not a cache entry name"),
    "absolute": (lambda m: build(renamed(m, "/tmp/" + m[0][0])), "not a cache entry name"),
    "subfolder": (lambda m: build(renamed(m, "kernels/" + m[0][0])), "not a cache entry name"),
    "uppercase": (lambda m: build(renamed(m, m[0][0].upper())), "not a cache entry name"),
    "not a string": (lambda m: build(m, manifest={"format": 1, "jitkernel": "x", "total_bytes": 0,
                                                  "entries": [{"name": 7, "size": 96, "sha256": "0" * 64}]}),
                     "not a cache entry name"),
    "huge size": (lambda m: build(m, manifest={"format": 1, "jitkernel": "x", "total_bytes": 1 << 50, "entries": [
        {"name": m[0][0], "size": 1 << 50, "sha256": "0" * 64}]}), "outside"),
    "huge total": (lambda m: build(m, total=1 << 50), "entries total"),
    "truncated": (lambda m: build(m)[:-40], "truncated or extended"),
    "extended": (lambda m: build(m) + b"\0", "truncated or extended"),
    "too short": (lambda m: build(m)[:10], "truncated"),
    "entry checksum": (lambda m: build(m, tamper=flip(-40)), "checksum mismatch"),
    "manifest checksum": (lambda m: build(m, tamper=flip(30)), "manifest checksum mismatch"),
    "file checksum": (lambda m: build(m, tamper=flip(-1)), "file checksum mismatch"),
    "version": (lambda m: build(m, version=2), "format version 2"),
    "magic": (lambda m: build(m, magic=b"PK\x03\x04\0\0\0\0"), "bad magic"),
    "duplicate": (lambda m: build([m[0], m[0]]), "appears twice"),
    "not an entry": (lambda m: build([(m[1][0], m[0][1])]), "not a valid cache entry"),
    "manifest keys": (lambda m: build(m, manifest={"entries": []}), "manifest must be an object"),
    "manifest size": (lambda m: struct.pack("<8sII", _bundle.MAGIC, 1, 0xFFFFFFFF) + b"\0" * 64, "manifest size"),
}


@pytest.mark.parametrize("why", sorted(HOSTILE))
def test_hostile_bundles_are_refused_and_nothing_is_written(good, tmp_path, why):
    make, message = HOSTILE[why]
    bundle = tmp_path / "hostile.jkbundle"
    bundle.write_bytes(make(good))
    before = jk.cache_info()
    for into in (None, tmp_path / "tier"):
        with pytest.raises(jk.BundleError, match=message) as e:
            jk.import_cache(bundle, into=into)
        assert str(bundle) in str(e.value)
    assert not (tmp_path / "tier").exists() and jk.cache_info().stores == before.stores
    assert not list((tmp_path / "target").rglob("*.jkc"))


def test_what_is_not_a_bundle_file(good, tmp_path):
    with pytest.raises(jk.BundleError, match="not a regular file"):
        jk.import_cache(tmp_path)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(jk.BundleError, match="not a regular file"):
        jk.import_cache(tmp_path / "fifo")  # refused, not waited on
    with pytest.raises(jk.BundleError, match="cannot be read"):
        jk.import_cache(tmp_path / "missing")
    bundle = tmp_path / "ok.jkbundle"
    bundle.write_bytes(build(good))
    with pytest.raises(jk.BundleError, match="limit is 10"):
        jk.import_cache(bundle, max_bytes=10)
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "linked" / "kernels")
    with pytest.raises(jk.ArgumentError, match="into"):
        jk.import_cache(bundle, into=tmp_path / "linked")  # never written through a link
    assert not list((tmp_path / "real").iterdir())
    (tmp_path / "open").mkdir(mode=0o777)
    os.chmod(tmp_path / "open", 0o777)
    with pytest.raises(jk.ArgumentError, match="writable by group or others"):
        jk.import_cache(bundle, into=tmp_path / "open")


def test_command_line(cache, tmp_path):
    source = cache(tmp_path / "source")
    fill(1)
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(source))

    def run(*args, folder=source):
        return subprocess.run([sys.executable, "-m", "jitkernel", "cache", *args], capture_output=True, text=True,
                              env=dict(env, JITKERNEL_CACHE_DIR=str(folder)), timeout=300)

    bundle = tmp_path / "b.jkbundle"
    out = run("export", str(bundle))
    assert out.returncode == 0 and "exported 2 entries" in out.stdout, out.stderr
    out = run("import", str(bundle), folder=tmp_path / "fresh")
    assert out.returncode == 0 and "imported 2 of 2 entries" in out.stdout, out.stderr
    assert entries(tmp_path / "fresh") == entries(source)
    out = run("import", str(bundle), "--into", str(tmp_path / "tier"))
    assert out.returncode == 0 and entries(tmp_path / "tier") == entries(source)
    bundle.write_bytes(bundle.read_bytes()[:-1])
    out = run("import", str(bundle), folder=tmp_path / "fresh2")
    assert out.returncode == 1 and "BundleError" in out.stderr and "truncated" in out.stderr
    assert not list(tmp_path.glob("fresh2/kernels/*.jkc"))
    assert run("import").returncode == 2


# Files written by export and import --into (issue 24, items 4 and 8): every temp file is created exclusively under
# an unpredictable name, so nothing planted at a name is written through, and nothing a killed process left behind
# (with a pid that a container has since reused) blocks a write.

def test_export_never_writes_through_a_link_at_its_temp_name(cache, tmp_path):
    cache(tmp_path / "source")
    fill(1)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    bundle = tmp_path / "out.jkbundle"
    planted = tmp_path / f"{bundle.name}.{os.getpid()}.tmp"  # the temp name export once used: <path>.<pid>.tmp
    os.symlink(victim, planted)
    report = jk.export_cache(bundle)
    assert report.entries == 2
    assert victim.read_bytes() == b"precious"
    assert not bundle.is_symlink() and stat.S_ISREG(os.lstat(bundle).st_mode)
    assert os.readlink(planted) == str(victim)  # left alone
    assert jk.import_cache(bundle, into=tmp_path / "tier").stored == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["source", "victim", "out.jkbundle",
                                                                 planted.name, "tier"])  # no temp file left


class Predicted:
    """Makes the next temp names bundles choose predictable: the first ``n`` random parts are ``0123456789abcdef``
    (an attacker who guessed them), then random again; the bundle's own (Python) and the entry files' (the core's)."""

    def __init__(self, monkeypatch, n=1):
        import secrets

        self.token = "0123456789abcdef"
        _core._cache_predict_temp_tokens(self.token, n)
        real, left = secrets.token_hex, [n]

        def token_hex(nbytes=None):
            if left[0] > 0:
                left[0] -= 1
                return self.token
            return real(nbytes)

        monkeypatch.setattr(_bundle.secrets, "token_hex", token_hex)


def test_temp_names_taken_by_links_are_skipped(cache, tmp_path, monkeypatch):
    cache(tmp_path / "source")
    fill(1)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    bundle = tmp_path / "out.jkbundle"
    token = Predicted(monkeypatch).token
    os.symlink(victim, tmp_path / f"{bundle.name}.{os.getpid()}.{token}.tmp")
    assert jk.export_cache(bundle).entries == 2
    assert victim.read_bytes() == b"precious" and not bundle.is_symlink()
    tier = tmp_path / "tier"
    (tier / "kernels").mkdir(parents=True, mode=0o755)
    names = sorted(entries(tmp_path / "source"))
    for name in names:  # a link at the first name each entry's temp file would get
        os.symlink(victim, tier / "kernels" / f"{name[:64]}.import.{os.getpid()}.{token}.tmp")
    Predicted(monkeypatch, n=len(names))
    assert jk.import_cache(bundle, into=tier).stored == 2
    assert victim.read_bytes() == b"precious"
    assert entries(tier) == entries(tmp_path / "source")
    Predicted(monkeypatch, n=10**6)  # every name taken: an error naming the entry, nothing written through
    (tier / "kernels" / names[0]).unlink()
    with pytest.raises(jk.BundleError, match=f"{names[0]}: cannot be written .*temp file name"):
        jk.import_cache(bundle, into=tier)
    with pytest.raises(jk.BundleError, match="out.jkbundle: cannot be written"):
        jk.export_cache(bundle)
    assert victim.read_bytes() == b"precious"


def test_import_is_not_blocked_by_what_a_killed_import_with_our_pid_left(good, tmp_path):
    bundle = tmp_path / "b.jkbundle"
    bundle.write_bytes(build(good))
    kernels = tmp_path / "tier" / "kernels"
    kernels.mkdir(parents=True, mode=0o755)
    for name, data in good:  # what `cache import --into` killed mid-write left, under every name it ever used
        (kernels / f"{name[:64]}.{os.getpid()}.import.tmp").write_bytes(data[:10])
        (kernels / f"{name[:64]}.import.{os.getpid()}.0123456789abcdef.tmp").write_bytes(data[:10])
    assert jk.import_cache(bundle, into=tmp_path / "tier").stored == len(good) // 2  # the binaries; each has its alias
    assert entries(tmp_path / "tier") == dict(good)
    out = subprocess.run([sys.executable, "-m", "jitkernel", "cache", "import", str(bundle), "--into",
                          str(tmp_path / "tier")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr


def test_export_path_that_names_a_folder(cache, tmp_path):
    with pytest.raises(jk.ArgumentError, match="path"):
        jk.export_cache(str(tmp_path) + os.sep)
    with pytest.raises(jk.BundleError, match="cannot be written"):
        jk.export_cache(tmp_path / "missing" / "b.jkbundle")


# A sparse bundle (issue 24, item 5): declaring hundreds of megabytes that take no disk, it must not take that memory
# either. Import streams: its peak memory (measured in a child process) grows by a few chunks for the check and for
# --into, and by one entry (at most the cache's cap) for the cache's own store, never by the whole bundle.

MB = 1 << 20
BOMB_ENTRIES, BOMB_PAYLOAD = 4, 32 * MB


def entry_header(key: bytes, payload_size: int, payload_sha256: bytes) -> bytes:
    """A cache entry file's header (cpp/jitkernel/cache/entry.hpp)."""
    return struct.pack("<8sII32sQ32sQ", b"\x89JKC\r\n\x1a\n", 1, 96, key, payload_size, payload_sha256, 0)


def sparse_bundle(path, entries: int, payload: int, damage_end: bool = False) -> None:
    """A valid bundle of `entries` entries whose payloads are `payload` zero bytes, written as a sparse file (holes
    for the zeros); `damage_end`: its last checksum is wrong."""
    zeros = bytes(MB)

    def hash_zeros(h):
        for _ in range(payload // MB):
            h.update(zeros)
        h.update(bytes(payload % MB))
        return h

    payload_sha = hash_zeros(hashlib.sha256()).digest()
    headers = [entry_header(hashlib.sha256(b"%d" % i).digest(), payload, payload_sha) for i in range(entries)]
    listing = {"format": 1, "jitkernel": jk.__version__, "total_bytes": entries * (96 + payload), "entries": [
        {"name": h[16:48].hex() + ".jkc", "size": 96 + payload,
         "sha256": hash_zeros(hashlib.sha256(h)).hexdigest()} for h in headers]}
    text = json.dumps(listing).encode()
    head = struct.pack("<8sII", _bundle.MAGIC, 1, len(text)) + text
    whole = hashlib.sha256(head + hashlib.sha256(head).digest())
    with open(path, "wb") as f:
        f.write(head + hashlib.sha256(head).digest())
        for h in headers:
            f.write(h)
            whole.update(h)
            hash_zeros(whole)
            f.seek(payload, os.SEEK_CUR)
        f.write(bytes(32) if damage_end else whole.digest())


PEAK = r"""
import json, resource, sys
import jitkernel as jk
path, into = sys.argv[1], (sys.argv[2] or None)
try:
    outcome = jk.import_cache(path, into=into).stored
except jk.BundleError as e:
    outcome = str(e)
print(json.dumps({"outcome": outcome, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def import_peak(bundle, folder, into="") -> dict:
    """Imports `bundle` in a fresh process (cache folder `folder`, or --into `into`): {"outcome": stored or the
    BundleError's text, "peak": its peak resident memory in bytes}."""
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(folder))
    env.pop("JITKERNEL_CACHE_MAX_BYTES", None)
    out = subprocess.run([sys.executable, "-c", PEAK, str(bundle), str(into)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sparse files, ru_maxrss in KiB: Linux")
@pytest.mark.parametrize("where", ["checked only", "into a folder", "the cache's store"])
def test_sparse_bundle_is_imported_with_bounded_memory(tmp_path, where):
    small = tmp_path / "small.jkbundle"
    sparse_bundle(small, 1, 1000)
    baseline = import_peak(small, tmp_path / "baseline")
    assert baseline["outcome"] == 1, baseline
    bomb = tmp_path / "bomb.jkbundle"
    sparse_bundle(bomb, BOMB_ENTRIES, BOMB_PAYLOAD, damage_end=where == "checked only")
    total = BOMB_ENTRIES * BOMB_PAYLOAD
    assert os.stat(bomb).st_blocks * 512 < total // 10  # sparse: the bundle takes (almost) no disk
    into = tmp_path / "tier" if where == "into a folder" else ""
    result = import_peak(bomb, tmp_path / "cache", into)
    growth = result["peak"] - baseline["peak"]
    if where == "checked only":  # the whole file was read and hashed, then refused: nothing written
        assert "file checksum mismatch" in str(result["outcome"]), result
        assert not (tmp_path / "cache" / "kernels").exists() or not list((tmp_path / "cache" / "kernels").iterdir())
    else:
        assert result["outcome"] == BOMB_ENTRIES, result
        folder = tmp_path / ("tier" if into else "cache") / "kernels"
        assert sorted(p.stat().st_size for p in folder.iterdir()) == [96 + BOMB_PAYLOAD] * BOMB_ENTRIES
    bound = (BOMB_PAYLOAD if where == "the cache's store" else 0) + 24 * MB  # one entry at most, plus slack
    assert growth < bound, f"peak memory grew by {growth / MB:.0f} MiB importing a {total / MB:.0f} MiB bundle"


@pytest.mark.parametrize("into", [False, True])
def test_entry_changed_after_the_check_is_never_written(good, tmp_path, monkeypatch, into):
    # Import checks the whole bundle, then reads each entry again to write it: an entry changed in between (a
    # bundle on shared storage rewritten meanwhile) is refused, never written; the entries before it were checked.
    bundle = tmp_path / "b.jkbundle"
    data = build(good)
    bundle.write_bytes(data)
    checked = _bundle._verified

    def then_changed(*args):
        result = checked(*args)
        bundle.write_bytes(flip(-40)(data))  # inside the last entry
        return result

    monkeypatch.setattr(_bundle, "_verified", then_changed)
    with pytest.raises(jk.BundleError, match=f"{good[-1][0]}: changed while being imported"):
        jk.import_cache(bundle, into=tmp_path / "tier" if into else None)
    folder = tmp_path / ("tier" if into else "target")
    assert entries(folder) == dict(good[:-1])
    assert sorted(p.name for p in (folder / "kernels").iterdir()) == sorted(n for n, _ in good[:-1])  # no temp file


def hand_made_members(n: int = 3) -> list:
    """n valid entry files (name, bytes) made by hand: no compile needed."""
    out = []
    for i in range(n):
        payload = bytes(range(i, i + 40))
        key = hashlib.sha256(b"hand-made %d" % i).digest()
        out.append((key.hex() + ".jkc", entry_header(key, len(payload), hashlib.sha256(payload).digest()) + payload))
    return sorted(out)


def test_mutated_bundles_give_only_bundle_errors_and_write_all_or_nothing(tmp_path):
    # Fuzz: byte flips, cuts, insertions and JSON-level edits of a valid bundle. Every import either stores exactly
    # the bundle's entries or raises a BundleError, writing nothing; no other exception, no temp file left.
    from hypothesis import HealthCheck, Phase, given, settings, strategies as st

    members = hand_made_members()
    data = build(members)
    assert jk.import_cache(_write(tmp_path / "ok.jkbundle", data), into=tmp_path / "ok").stored == len(members)
    edits = st.one_of(
        st.tuples(st.just("flip"), st.integers(0, len(data) - 1), st.integers(1, 255)),
        st.tuples(st.just("cut"), st.integers(0, len(data) - 1), st.integers(1, 64)),
        st.tuples(st.just("insert"), st.integers(0, len(data)), st.binary(min_size=1, max_size=16)),
        st.tuples(st.just("field"), st.sampled_from(["size", "sha256", "name", "total_bytes"]),
                  st.one_of(st.integers(-2, 1 << 62), st.text(max_size=70), st.none(), st.lists(st.integers()))),
    )
    runs = iter(range(10**9))

    @settings(max_examples=300, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(edits)
    def one(edit):
        kind, at, what = edit
        if kind == "flip":
            mutated = data[:at] + bytes([data[at] ^ what]) + data[at + 1:]
        elif kind == "cut":
            mutated = data[:at] + data[at + what:]
        elif kind == "insert":
            mutated = data[:at] + what + data[at:]
        else:
            listing = {"format": 1, "jitkernel": jk.__version__, "total_bytes": sum(len(d) for _, d in members),
                       "entries": [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                                   for n, d in members]}
            if at == "total_bytes":
                listing["total_bytes"] = what
            else:
                listing["entries"][1][at] = what
            mutated = build(members, manifest=listing)
        run = next(runs)
        bundle = _write(tmp_path / f"m{run}.jkbundle", mutated)
        tier = tmp_path / f"t{run}"
        try:
            stored = jk.import_cache(bundle, into=tier)
        except jk.BundleError:
            assert not tier.exists()
        else:
            assert stored.stored == len(members) and entries(tier) == dict(members)
        bundle.unlink()

    one()


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_manifest_with_a_lone_surrogate_or_deep_nesting_is_a_bundle_error(tmp_path):
    # The manifest is read by the core's one strict JSON reader of untrusted text (core/json.hpp): nesting bounded,
    # every string valid Unicode; both are BundleErrors, not a RecursionError or text that later fails to encode.
    import hashlib

    from jitkernel._fleet import bundle as _bundle

    for text in ('{"format": 1, "jitkernel": "\\ud800", "entries": []}', "[" * 100000 + "]" * 100000):
        body = text.encode()
        fixed = _bundle._HEADER.pack(_bundle.MAGIC, _bundle.FORMAT, len(body))
        head = fixed + body
        path = tmp_path / "bad.jkbundle"
        path.write_bytes(head + hashlib.sha256(head).digest() + hashlib.sha256(b"").digest())
        with pytest.raises(jk.BundleError, match="manifest is not valid JSON"):
            jk.import_cache(str(path), into=str(tmp_path / "into"))
