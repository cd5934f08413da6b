"""The compile cache against another local user (issue 24, items 1 and 2): a second Unix user, made with `useradd`,
who may write a folder above the cache folder or above a read-only tier, and who swaps that folder for one of their
own holding an entry with a valid header and checksum for a key the victim is about to look up (the binary of
another kernel: detectably wrong). The victim process must never return the attacker's bytes:

- a cache folder or a tier whose parents another user owns, or may write without the sticky bit, is refused when
  the environment is read (one CacheWarning naming the parent); a sticky parent (/tmp) is fine;
- a folder vetted at start and swapped afterwards (its parent made writable later) is not followed: the process
  keeps working in the folder it vetted (it holds it open);
- a tier's `kernels` folder or entry owned by a third user is refused.

The attacker's steps run as that user (`subprocess.run(..., user=)`), the victim in child processes with timeouts.
Needs root (to create the user and hand it folders) and `useradd`; skipped cleanly otherwise. The cases that need
no second user (a parent writable by others, without or with the sticky bit) are in test_cache_hostile.py.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from _cache_runs import environment, run

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a second Unix user: Linux")

ATTACKER = "jk-cache-attacker"


@pytest.fixture(scope="module")
def attacker():
    """(uid, gid) of a second Unix user, created when missing."""
    if os.geteuid() != 0:
        pytest.skip("creating a second user and handing it folders needs root")
    try:
        pw = pwd.getpwnam(ATTACKER)
    except KeyError:
        useradd = shutil.which("useradd") or shutil.which("useradd", path="/usr/sbin:/sbin:/usr/bin:/bin")
        if useradd is None:
            pytest.skip("useradd is missing: cannot create a second user")
        made = subprocess.run([useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", ATTACKER],
                              capture_output=True, text=True, timeout=60)
        try:
            pw = pwd.getpwnam(ATTACKER)  # another session may have created it meanwhile (exit status 9)
        except KeyError:
            pytest.skip(f"useradd {ATTACKER} failed: {made.stderr.strip()}")
    return pw.pw_uid, pw.pw_gid


@pytest.fixture
def base():
    """A folder the second user can reach (tmp_path is private to root): /tmp/<random>, mode 0755, owned by root."""
    folder = Path(tempfile.mkdtemp(prefix="jk-other-user-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """factor -> SHA-256 of the cubin NVRTC makes without any cache."""
    result = run(tmp_path_factory.mktemp("none"), factors=(2, 3), JITKERNEL_CACHE="0")
    return dict(zip((2, 3), result["shas"]))


def as_user(user, script: str, cwd) -> None:
    """Runs the shell `script` in `cwd` as `user` (uid, gid), without root's groups."""
    uid, gid = user
    # The system's shell and tools by absolute path: the caller's PATH may name only a venv (CI's wheel step),
    # or folders that user cannot enter.
    done = subprocess.run(["/bin/sh", "-euc", script], cwd=cwd, user=uid, group=gid, extra_groups=[],
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LC_ALL": "C"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"the attacker's step failed: {done.stderr}"


def fill(folder) -> dict:
    """Compiles factors 2 and 3 into the cache `folder` (as root); factor -> entry path."""
    keys = {}
    for factor in (2, 3):
        before = set((folder / "kernels").glob("*.jkc")) if (folder / "kernels").exists() else set()
        assert run(folder, factors=(factor,))["stores"] == 1
        (keys[factor],) = set((folder / "kernels").glob("*.jkc")) - before
    return keys


def forge(entries: dict, into: Path) -> Path:
    """An entry for factor 3's key holding factor 2's binary: a valid header and checksum, the wrong kernel. Written
    where the attacker can read it."""
    good = entries[2].read_bytes()
    forged = good[:16] + bytes.fromhex(entries[3].name[:64]) + good[48:]
    path = into / "forged.jkc"
    path.write_bytes(forged)
    os.chmod(path, 0o644)
    return path


# What the attacker does: move `name` (the victim's folder) away and put their own in its place, holding the forged
# entry under factor 3's key, with modes a tier may have.
SWAP = """
mv {name} {name}.moved
mkdir -p {name}/kernels
cp {forged} {name}/kernels/{entry}
chmod 755 {name} {name}/kernels
chmod 644 {name}/kernels/{entry}
"""

# The victim: compiles factor 2 (the environment is read, the folder vetted), says so, waits for a line on stdin
# (the attacker acts meanwhile), then compiles factor 3 and reports.
VICTIM = textwrap.dedent("""
    import hashlib, json, sys, warnings
    warnings.simplefilter("always")
    import numpy as np
    import jitkernel as jk

    def compile(factor):
        k = jk.cuda_kernel(name="scaled", input_names=["inp"], output_names=["out"],
                           source=f"auto i = threadIdx.x; out[i] = inp[i] * {factor};")
        return hashlib.sha256(k.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])).hexdigest()

    with warnings.catch_warnings(record=True) as record:
        first = compile(2)
        print("ready", flush=True)
        sys.stdin.readline()
        second = compile(3)
    i = jk.cache_info()
    print(json.dumps(dict(shas=[first, second], hits=i.hits, misses=i.misses, readonly_hits=i.readonly_hits,
                          enabled=i.enabled, warnings=[str(w.message) for w in record if w.category is jk.CacheWarning])))
""")


def victim_with_a_swap_between(folder, between, **env) -> dict:
    """Runs VICTIM on the cache `folder`, calling `between()` once it has compiled factor 2."""
    proc = subprocess.Popen([sys.executable, "-c", VICTIM], env=environment(folder, **env), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        between()
        out, err = proc.communicate("go\n", timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


# ---- item 1: the writable folder ---------------------------------------------------------------------------------

def test_cache_folder_swapped_after_start_is_not_followed(attacker, base, reference):
    # The parent is safe when the process starts (root's, 0755), becomes writable by others afterwards, and the
    # other user swaps the cache folder for theirs: the process keeps reading the folder it vetted.
    shared = base / "shared"
    shared.mkdir(mode=0o755)
    cache = shared / "cache"
    entries = fill(cache)
    forged = forge(entries, base)

    def swap():
        os.chmod(shared, 0o777)
        as_user(attacker, SWAP.format(name="cache", forged=forged, entry=entries[3].name), shared)

    result = victim_with_a_swap_between(cache, swap)
    assert result["shas"] == [reference[2], reference[3]], "the process returned the other user's binary"
    assert result["hits"] == 2 and result["misses"] == 0  # both from the folder it vetted (now cache.moved)
    assert os.stat(shared / "cache").st_uid == attacker[0]  # the swap did happen


@pytest.mark.parametrize("parent", ["owned by the other user", "writable by others"])
def test_cache_folder_another_user_can_replace_is_refused(attacker, base, reference, parent):
    # The case: JITKERNEL_CACHE_DIR in a folder another user owns or may write. Refused at start (one
    # warning naming the parent), so a swap in the middle of the process finds nothing to serve.
    shared = base / "shared"
    shared.mkdir(mode=0o755)
    cache = shared / "cache"
    entries = fill(cache)
    forged = forge(entries, base)
    if parent == "owned by the other user":
        os.chown(shared, *attacker)
    else:
        os.chmod(shared, 0o777)

    def swap():
        as_user(attacker, SWAP.format(name="cache", forged=forged, entry=entries[3].name), shared)

    result = victim_with_a_swap_between(cache, swap)
    assert result["shas"] == [reference[2], reference[3]], "the process returned the other user's binary"
    assert result["hits"] == 0 and not result["enabled"]
    assert len(result["warnings"]) == 1, result["warnings"]
    message = result["warnings"][0]
    assert str(shared) in message and ("owned by uid" in message or "writable by others" in message), message


# ---- item 2: read-only tiers ---------------------------------------------------------------------------------------

def test_tier_others_may_write_above_is_refused_after_a_swap(attacker, base, tmp_path, reference):
    # The case: the tier's parent is writable by others, and another user replaces the whole tier with
    # theirs before the process starts (every new process would serve it).
    shared = base / "shared"
    shared.mkdir(mode=0o755)
    tier = shared / "tier"
    entries = fill(tier)
    os.chmod(tier, 0o755)
    os.chmod(tier / "kernels", 0o755)
    forged = forge(entries, base)
    os.chmod(shared, 0o777)
    as_user(attacker, SWAP.format(name="tier", forged=forged, entry=entries[3].name), shared)
    result = run(tmp_path / "writable", factors=(3,), JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["shas"] == [reference[3]], "the process returned the other user's binary"
    assert result["readonly_hits"] == 0 and result["compiles"] == 1
    assert len(result["warnings"]) == 1 and f"{shared} is writable by others" in result["warnings"][0]


def test_tier_inside_another_users_folder_is_refused(attacker, base, tmp_path, reference):
    # Root's tier in a folder another user owns: that user could replace it at any time, so it is refused from the
    # start (a tier that is wholly theirs, folders above included, is their tier: the user who names it trusts them,
    # as test_tier_owned_by_another_user_in_a_safe_place_is_used allows).
    shared = base / "shared"
    shared.mkdir(mode=0o755)
    tier = shared / "tier"
    fill(tier)
    os.chmod(tier, 0o755)
    os.chmod(tier / "kernels", 0o755)
    os.chown(shared, *attacker)
    result = run(tmp_path / "writable", factors=(3,), JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["shas"] == [reference[3]]
    assert result["readonly_hits"] == 0 and result["compiles"] == 1
    assert len(result["warnings"]) == 1, result["warnings"]
    assert f"{shared} is owned by uid {attacker[0]}" in result["warnings"][0]


def test_tier_swapped_after_start_is_not_followed(attacker, base, tmp_path, reference):
    shared = base / "shared"
    shared.mkdir(mode=0o755)
    tier = shared / "tier"
    entries = fill(tier)
    os.chmod(tier, 0o755)
    os.chmod(tier / "kernels", 0o755)
    forged = forge(entries, base)

    def swap():
        os.chmod(shared, 0o777)
        as_user(attacker, SWAP.format(name="tier", forged=forged, entry=entries[3].name), shared)

    result = victim_with_a_swap_between(tmp_path / "writable", swap, JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["shas"] == [reference[2], reference[3]], "the process returned the other user's binary"
    assert result["readonly_hits"] == 2  # both from the tier it vetted (now tier.moved)


@pytest.mark.parametrize("what", ["kernels", "entry"])
def test_tier_part_owned_by_a_third_user_is_refused(attacker, base, tmp_path, reference, what):
    # The tier is root's; its kernels folder or one entry belongs to another user, who may rewrite it whatever its
    # mode says.
    tier = base / "tier"
    entries = fill(tier)
    os.chmod(tier, 0o755)
    os.chmod(tier / "kernels", 0o755)
    forged = forge(entries, base)
    os.chmod(entries[3], 0o644)
    os.chown(tier / "kernels" if what == "kernels" else entries[3], *attacker)
    # The owner of the folder replaces the entry; the owner of the entry rewrites it in place.
    as_user(attacker, f"rm -f {entries[3]}; cp {forged} {entries[3]}" if what == "kernels"
            else f"cat {forged} > {entries[3]}", base)
    result = run(tmp_path / "writable", factors=(3,), JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["shas"] == [reference[3]], "the process returned the other user's binary"
    assert result["readonly_hits"] == 0 and result["compiles"] == 1
    if what == "kernels":
        assert len(result["warnings"]) == 1 and "owned by uid" in result["warnings"][0], result["warnings"]
    else:
        assert result["corrupt"] == 1  # a bad entry: a miss


def test_tier_owned_by_another_user_in_a_safe_place_is_used(attacker, base, tmp_path, reference):
    # What stays allowed: a tier (and all of it) belonging to another user, in folders only root may change.
    tier = base / "tier"
    fill(tier)
    for root, dirs, files in os.walk(tier):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.chown(name, *attacker)
            os.chmod(name, 0o755 if os.path.isdir(name) else 0o644)
    result = run(tmp_path / "writable", factors=(3,), JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["shas"] == [reference[3]] and result["readonly_hits"] == 1 and result["warnings"] == []
