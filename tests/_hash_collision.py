"""Two different PTX modules of equal size whose 64-bit ``jk::hash_bytes`` (cpp/jitkernel/core/hash.cpp) is equal:
what a cache keyed by that hash plus the size could not tell apart. The hash runs four lanes over 32-byte blocks,
and one lane step ``rotl(acc + word * P2, 31) * P1`` can be inverted for the word, so after two different prefixes
one block of chosen words brings the lanes of the second module to the state of the first; an equal tail then
gives an equal hash. The chosen block sits in a ``//`` comment after a filler block that is varied until both
modules are printable ASCII, so that the driver's PTX parser accepts them as readily as ours."""
from __future__ import annotations

import functools
import random

MASK = (1 << 64) - 1
P1 = 0x9E3779B185EBCA87
P2 = 0xC2B2AE3D27D4EB4F
P3 = 0x165667B19E3779F9
P4 = 0x85EBCA77C2B2AE63
P5 = 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & MASK


def _step(acc: int, word: int) -> int:
    return (_rotl((acc + word * P2) & MASK, 31) * P1) & MASK


def _merge(h: int, lane: int) -> int:
    return ((h ^ _step(0, lane)) * P1 + P4) & MASK


def _avalanche(h: int) -> int:
    h ^= h >> 33
    h = (h * P2) & MASK
    h ^= h >> 29
    h = (h * P3) & MASK
    return h ^ (h >> 32)


def _lanes(data: bytes) -> list:
    lanes = [(P1 + P2) & MASK, P2, 0, (-P1) & MASK]
    for block in range(0, len(data) - len(data) % 32, 32):
        for j in range(4):
            lanes[j] = _step(lanes[j], int.from_bytes(data[block + 8 * j:block + 8 * j + 8], "little"))
    return lanes


def hash_bytes(data: bytes) -> int:
    """hash.cpp's hash_bytes with seed 0, in Python."""
    size, p = len(data), 0
    if size >= 32:
        a, b, c, d = _lanes(data)
        p = size - size % 32
        h = (_rotl(a, 1) + _rotl(b, 7) + _rotl(c, 12) + _rotl(d, 18)) & MASK
        for lane in (a, b, c, d):
            h = _merge(h, lane)
    else:
        h = P5
    h = (h + size) & MASK
    while p + 8 <= size:
        h ^= _step(0, int.from_bytes(data[p:p + 8], "little"))
        h = (_rotl(h, 27) * P1 + P4) & MASK
        p += 8
    if p + 4 <= size:
        h ^= (int.from_bytes(data[p:p + 4], "little") * P1) & MASK
        h = (_rotl(h, 23) * P2 + P3) & MASK
        p += 4
    while p < size:
        h ^= (data[p] * P5) & MASK
        h = (_rotl(h, 11) * P1) & MASK
        p += 1
    return _avalanche(h)


_P1_INV = pow(P1, -1, 1 << 64)
_P2_INV = pow(P2, -1, 1 << 64)


def _word_reaching(acc: int, target: int) -> int:
    """The word w with _step(acc, w) == target."""
    before_rotate = _rotl((target * _P1_INV) & MASK, 64 - 31)
    return ((before_rotate - acc) * _P2_INV) & MASK


def _printable_pair(delta: int):
    """A word w with w and (w + delta) mod 2**64 both printable ASCII (byte by byte, low to high, following the
    carry), or None."""
    @functools.lru_cache(maxsize=None)
    def solve(k: int, carry: int):
        if k == 8:
            return 0
        d = (delta >> (8 * k)) & 0xFF
        for byte in range(0x20, 0x7F):
            s = byte + d + carry
            if 0x20 <= s % 256 < 0x7F:
                rest = solve(k + 1, int(s >= 256))
                if rest is not None:
                    return byte | (rest << 8)
        return None

    return solve(0, 0)


def _padded(text: str, size: int) -> bytes:
    """`text` (ending in a `//` that opens a comment) padded with spaces before that `//`."""
    data = text.encode()
    assert len(data) <= size
    return data[:-2] + b" " * (size - len(data)) + b"//"


def colliding_ptx(body_a: str, body_b: str, seed: int = 0) -> tuple:
    """Two PTX modules, `header + body_a` and `header + body_b` (each body ends where a comment may start), of equal
    size and equal hash_bytes. Each ends in one comment line holding two 32-byte blocks: a filler (random for B,
    varied per lane until the next block can be printable) and the block that makes B's lanes equal to A's."""
    header = ".version 8.0\n.target sm_90\n.address_size 64\n"
    size = (max(len(header + body_a), len(header + body_b)) + 2 + 31) // 32 * 32
    prefix_a = _padded(header + body_a + "//", size) + b" " * 32
    lanes_a = _lanes(prefix_a)
    prefix_b = _padded(header + body_b + "//", size)
    lanes_b = _lanes(prefix_b)
    rng = random.Random(seed)
    filler_b, block_a, block_b = b"", b"", b""
    for j in range(4):
        while True:
            filler = bytes(rng.randrange(0x20, 0x7F) for _ in range(8))
            lane_b = _step(lanes_b[j], int.from_bytes(filler, "little"))
            # _step(lane_b, w_b) == _step(lane_a, w_a)  <=>  w_b == w_a + (lane_a - lane_b) / P2
            delta = ((lanes_a[j] - lane_b) * _P2_INV) & MASK
            word_a = _printable_pair(delta)
            if word_a is not None:
                break
        word_b = (word_a + delta) & MASK
        assert _word_reaching(lane_b, _step(lanes_a[j], word_a)) == word_b
        filler_b += filler
        block_a += word_a.to_bytes(8, "little")
        block_b += word_b.to_bytes(8, "little")
    a = prefix_a + block_a + b"\n"
    b = prefix_b + filler_b + block_b + b"\n"
    assert a != b and len(a) == len(b) and hash_bytes(a) == hash_bytes(b)
    assert all(0x20 <= c < 0x7F or c == 0x0A for c in a + b)
    return a, b
