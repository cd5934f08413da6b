"""Per-call launch overhead of jitkernel beside other ways to run a CUDA kernel, the floors it is held to, where
the time of a call goes, and the bandwidth of jitkernel's kernels and copies (issue 6).

Every variant runs the same kernel, out = exp(inp) over n float32 (n = 4096 by default), on the legacy default
stream where the library lets us choose; each variant's output is checked once before it is timed. For each:
  wall_us   median over --reps blocks of --iters calls, one synchronize per block: the issue cost of a call
  event_us  the same blocks timed with CUDA events on the launch stream: device-timeline time per call
  rt_us     call + synchronize each time (latency), median over blocks
jitkernel runs with jk.Array, torch and CuPy arrays in and out, each with the output allocated by the call and
given (outputs=), each also as a bound call (kernel.bind, then bound(x)), and with 1, 4 and 16 array inputs
(out = their sum). Floors: the C++ benchmark's floor/* cases
(the same kernel through the bare driver: launch; stream-ordered alloc + launch + free; launch + synchronize),
run by this script from --cpp-bench (default: where benchmarks/device_run.sh builds it), median of 5 repetitions. Bandwidth: exp over
2^28 float32 (jitkernel vs a CuPy RawKernel with the same body) and the ensure_row_contiguous copy of a
transposed 16384 x 16384 float32 array (vs a device-to-device copy), CUDA-event timed, bytes read + written.
The targets table gives each ratio, its limit, and whether it is met. Writes bench_launch.md / .json to --out;
exits 1 only when a jitkernel variant fails.

    python3 benchmarks/python/bench_launch.py --out DIR [--quick] [--peers jitkernel,cupy,...] [--sizes 4096]
        [--cpp-bench PATH] [--no-bandwidth]

Head to head: the variants issue 14's targets compare are timed again in --rounds interleaved rounds
(_launch_pairs.py), and those targets are paired ratios (median over rounds, with the IQR): this machine's drift
moves sequential measurements by more than the differences measured.

Grown from shared/peers.py (same structure: one function per peer, a common timing loop). The variants and the
timing loop are in _launch_peers.py, the floors, stages and bandwidth runs in _launch_floors.py, the ctypes driver
rows in _launch_raw.py, the interleaved rounds in _launch_pairs.py.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from _bench_common import Skip, environment, fmt
from _launch_floors import DEFAULT_CPP_BENCH, bandwidth, cpp_cases, stages
from _launch_peers import ARG_COUNTS, PEER_LABELS, EventTimer, measure
from _launch_peers import PEERS as FRAMEWORK_PEERS
from _launch_pairs import HEAD_TO_HEAD, interleaved, paired_targets
from _launch_raw import peer_raw

PEERS = {"raw": peer_raw, **FRAMEWORK_PEERS}  # the same-process driver baseline first
PEER_LABELS = {"raw": "raw driver (ctypes)", **PEER_LABELS}

BASELINES = ("cupy RawKernel, outputs given", "torch.exp, out= given")


# --- targets ---------------------------------------------------------------------------------------------

def targets(res, n):
    """Issues 6 and 14: targets as rows (target, value, limit, met, note). Ratios use numbers from this run only."""
    rows = res["launch"].get(str(n), {})
    floors = res.get("cpp", {})
    wall = lambda name: rows.get(name, {}).get("wall_us")
    rt = lambda name: rows.get(name, {}).get("rt_us")
    out = []

    def ratio(target, num, den, limit, den_name, higher_is_better=False):
        if num is None or den is None:
            out.append({"target": target, "value": None, "limit": limit, "met": None,
                        "note": f"not measured ({den_name} missing)" if den is None else "not measured"})
            return
        value = num / den
        met = value >= limit if higher_is_better else value <= limit
        out.append({"target": target, "value": value, "limit": limit, "met": met,
                    "note": f"{fmt(num)} / {fmt(den)} ({den_name})"})

    f_launch = floors.get("floor/raw_exp4096_launch")
    f_alloc = floors.get("floor/raw_exp4096_alloc_launch_free")
    f_sync = floors.get("floor/raw_exp4096_launch_sync")
    for label in ("jk.Array", "torch"):
        ratio(f"{label}: output allocated ≤ 1.3 × raw alloc+launch+free", wall(f"jitkernel, {label}, output allocated"),
              f_alloc, 1.3, "C++ floor/raw_exp4096_alloc_launch_free")
        ratio(f"{label}: outputs given ≤ 1.2 × raw launch", wall(f"jitkernel, {label}, outputs given"), f_launch, 1.2,
              "C++ floor/raw_exp4096_launch")
        ratio(f"{label}: call + synchronize ≤ 1.1 × raw", rt(f"jitkernel, {label}, outputs given"), f_sync, 1.1,
              "C++ floor/raw_exp4096_launch_sync")
    ratio("torch in/out, outputs given ≤ torch.exp(x, out=)", wall("jitkernel, torch, outputs given"),
          wall("torch.exp, out= given"), 1.0, "torch.exp, out= given")
    ratio("torch in/out, output allocated ≤ torch.exp(x)", wall("jitkernel, torch, output allocated"),
          wall("torch.exp, output allocated"), 1.0, "torch.exp, output allocated")
    for label in ("jk.Array", "torch"):
        w = [wall(f"jitkernel, {label}, {c} inputs, outputs given") for c in ARG_COUNTS]
        if None in w:
            out.append({"target": f"{label}: each extra array input ≤ 0.15 µs", "value": None, "limit": 0.15,
                        "met": None, "note": "not measured"})
        else:
            slope = (w[-1] - w[0]) / (ARG_COUNTS[-1] - ARG_COUNTS[0])
            out.append({"target": f"{label}: each extra array input ≤ 0.15 µs", "value": slope, "limit": 0.15,
                        "met": slope <= 0.15,
                        "note": f"({fmt(w[-1])} − {fmt(w[0])}) / {ARG_COUNTS[-1] - ARG_COUNTS[0]} µs"})
    bw = res.get("bandwidth", {})
    ratio("exp over 2^28 floats ≥ 0.98 × CuPy RawKernel (GB/s)", bw.get("exp_jitkernel_GBps"),
          bw.get("exp_cupy_rawkernel_GBps"), 0.98, "CuPy RawKernel", higher_is_better=True)
    ratio("ensure_row_contiguous of a transposed array ≥ 0.8 × D2D copy (GB/s)",
          bw.get("contiguous_copy_jitkernel_GBps"), bw.get("d2d_copy_GBps"), 0.8, "device-to-device copy",
          higher_is_better=True)
    return out


# --- report -----------------------------------------------------------------------------------------------

def markdown(res):
    env = res["environment"]
    lines = ["# Launch overhead: jitkernel and peers",
             "",
             f"{env.get('device', 'no CUDA device')} · commit {env.get('commit')} · {env.get('date')} · "
             f"Python {env.get('python')} · {res['config']['iters']} calls per block, median of "
             f"{res['config']['reps']} blocks",
             "",
             "Kernel: out = exp(inp), float32. wall = host time per call (the issue cost), one synchronize per "
             "block; event = CUDA events on the launch stream; rt = call + synchronize each time. Ratios are wall "
             "over the baseline's wall at the same size, measured in this run.",
             ""]
    if res.get("targets"):
        lines += ["## Targets (issues 6 and 14; ratios from this run)", "",
                  "| target | value | limit | met | how |", "|---|---:|---:|---|---|"]
        for t in res["targets"]:
            met = "–" if t["met"] is None else ("yes" if t["met"] else "**no**")
            if t["met"] is False and t["value"] is not None:
                over = t["value"] / t["limit"]
                met += f" ({fmt((over - 1) * 100, 0)}% over)" if over > 1 else f" ({fmt((1 - over) * 100, 0)}% short)"
            lines.append(f"| {t['target']} | {fmt(t['value'])} | {t['limit']} | {met} | {t['note']} |")
        lines.append("")
    h2h = res.get("head_to_head")
    if h2h:
        lines += ["## Head to head (interleaved rounds: one block of each variant per round, order rotated)", "",
                  "| variant | median µs/call | min | max |", "|---|---:|---:|---:|"]
        lines += [f"| {name} | {fmt(statistics.median(xs))} | {fmt(min(xs))} | {fmt(max(xs))} |"
                  for name, xs in sorted(h2h.items(), key=lambda kv: statistics.median(kv[1]))]
        lines.append("")
    if res.get("cpp"):
        lines += ["## C++ floors (benchmarks/cpp, same run)", "", "| case | µs per operation |", "|---|---:|"]
        lines += [f"| {name} | {fmt(us)} |" for name, us in res["cpp"].items()]
        lines.append("")
    elif res.get("cpp_skipped"):
        lines += [f"C++ floors: skipped: {res['cpp_skipped']}", ""]
    notes = {}
    for n, rows in res["launch"].items():
        base = {b: rows.get(b, {}).get("wall_us") for b in BASELINES}
        lines += [f"## n = {n}", "",
                  "| variant | wall µs/call | event µs/call | rt µs | × CuPy RawKernel | × torch.exp out= | version |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        for name, r in rows.items():
            if "skipped" in r or "error" in r:
                what = f"skipped: {r['skipped']}" if "skipped" in r else f"error: {r['error']}"
                lines.append(f"| {name} | {what[:200]} | | | | | |")
                continue
            ratios = [fmt(r["wall_us"] / b) if b else "–" for b in base.values()]
            lines.append(f"| {name} | {fmt(r['wall_us'])} | {fmt(r['event_us'])} | {fmt(r['rt_us'])} | "
                         f"{ratios[0]} | {ratios[1]} | {r.get('version', '')} |")
            if r.get("note"):
                notes.setdefault(name, r["note"])
        lines.append("")
    if notes:
        lines += ["Notes: " + "; ".join(f"*{name}*: {note}" for name, note in notes.items()), ""]
    if res.get("stages"):
        lines += ["## Where a jitkernel call's host time goes", "",
                  "call = the whole call with one synchronize per block; `_call` = the list-form entry the call "
                  "slot forwards to (the difference is the keyword parsing); `_convert` = argument parsing, array "
                  "import and stream lookup, no launch.", "",
                  "| call | call µs | `_call` µs | `_convert` µs (no launch) |", "|---|---:|---:|---:|"]
        for name, st in res["stages"].items():
            if "host_us" in st:
                lines.append(f"| {name} | {fmt(st['host_us'])} | | |")
            else:
                lines.append(f"| {name} | {fmt(st['call_us'])} | {fmt(st['entry_call_us'])} | {fmt(st['convert_us'])} |")
        lines.append("")
    bw = res.get("bandwidth")
    if bw:
        lines += ["## Bandwidth (GB/s, bytes read + written, CUDA events, median)", ""]
        if "skipped" in bw or "error" in bw:
            lines += [f"{bw.get('skipped') or bw.get('error')}", ""]
        else:
            lines += ["| what | GB/s |", "|---|---:|"]
            lines += [f"| {k_} | {fmt(v, 0)} |" for k_, v in bw.items() if k_.endswith("GBps")]
            lines += ["", f"exp over {bw['exp_elements']} float32; transposed array {bw['transpose_side']}² float32.",
                      ""]
    return "\n".join(lines)


def save(res, out):
    """Writes bench_launch.json and .md (also after each peer: a crash or timeout keeps what was measured)."""
    with open(os.path.join(out, "bench_launch.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(os.path.join(out, "bench_launch.md"), "w") as f:
        f.write(md + "\n")
    return md


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for bench_launch.md and bench_launch.json")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    ap.add_argument("--sizes", default="4096", help="comma-separated element counts")
    ap.add_argument("--cpp-bench", default=DEFAULT_CPP_BENCH, help="the C++ benchmark program (floors)")
    ap.add_argument("--no-bandwidth", action="store_true", help="skip the 2^28-element bandwidth runs")
    ap.add_argument("--iters", type=int, default=5000, help="calls per timed block")
    ap.add_argument("--reps", type=int, default=5, help="timed blocks per measurement")
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds of the head-to-head section")
    ap.add_argument("--quick", action="store_true", help="500 calls x 3 blocks (smoke test)")
    args = ap.parse_args(argv)
    if args.quick:
        args.iters, args.reps, args.rounds = 500, 3, 3
    args.peers = [p for p in args.peers.split(",") if p]
    unknown = [p for p in args.peers if p not in PEERS]
    if unknown:
        ap.error(f"unknown peers {unknown}; choose from {list(PEERS)}")
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    return args


def run_peer(res, args, n, peer, timer, live):
    """Measures every variant of one peer at n elements into res (and keeps the head-to-head ones in ``live``);
    True when a jitkernel variant failed."""
    rows = res["launch"].setdefault(str(n), {})
    failed = False
    try:
        variants = PEERS[peer](n)
    except Skip as e:
        variants = [e]
    except Exception as e:  # a broken peer is reported in the table; the others still run
        rows[f"{peer} (setup)"] = {"error": f"{type(e).__name__}: {e}"}
        return peer == "jitkernel"
    for v in variants:
        if isinstance(v, Skip):
            name = v.name or PEER_LABELS[peer]
            rows[name] = {"skipped": str(v)}
            if n == args.sizes[0]:
                res["skipped"].append(f"{name}: {v}")
            print(f"n={n:<8} {name:<45} skipped: {v}", flush=True)
            continue
        try:
            r = measure(v, args.iters, args.reps, timer)
            r["version"] = v["version"]
        except Exception as e:
            r = {"error": f"{type(e).__name__}: {e}"}
            failed |= peer == "jitkernel"
        rows[v["name"]] = r
        if "error" not in r and v["name"] in HEAD_TO_HEAD:
            live.append(v)
        print(f"n={n:<8} {v['name']:<45} " + (
            f"wall {fmt(r['wall_us'])} µs  event {fmt(r['event_us'])} µs  rt {fmt(r['rt_us'])} µs"
            if "error" not in r else r["error"]), flush=True)
    return failed


def run_jitkernel_extras(res, args):
    """Stages, C++ floors, bandwidth and the targets table into res; True when a jitkernel measurement failed."""
    failed = False
    try:
        res["stages"] = stages(args.sizes[0], args.iters, args.reps)
    except Skip as e:
        res["stages_skipped"] = str(e)
    except Exception as e:
        res["stages_error"] = f"{type(e).__name__}: {e}"
        failed = True
    save(res, args.out)
    try:
        res["cpp"] = {**cpp_cases(args.cpp_bench, "^floor/"), **cpp_cases(args.cpp_bench, "^launch/")}
    except Skip as e:
        res["cpp_skipped"] = str(e)
    except (OSError, subprocess.SubprocessError) as e:
        res["cpp_skipped"] = f"{type(e).__name__}: {e}"
    if not args.no_bandwidth:
        try:
            res["bandwidth"] = bandwidth(args.quick)
        except Skip as e:
            res["bandwidth"] = {"skipped": str(e)}
        except Exception as e:
            res["bandwidth"] = {"error": f"{type(e).__name__}: {e}"}
            failed = True
    res["targets"] = paired_targets(res.get("head_to_head", {})) + targets(res, args.sizes[0])
    return failed


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    res = {"environment": environment(), "launch": {}, "skipped": [],
           "config": {"iters": args.iters, "reps": args.reps, "sizes": args.sizes, "peers": args.peers}}
    print(json.dumps(res["environment"]), flush=True)
    timer = EventTimer()
    failed = False
    for n in args.sizes:
        res["launch"].setdefault(str(n), {})
        live = []
        for peer in args.peers:
            failed |= run_peer(res, args, n, peer, timer, live)
            save(res, args.out)
        if n == args.sizes[0] and len(live) > 1:
            res["head_to_head"] = interleaved(live, args.iters, args.rounds)
            save(res, args.out)
    if "jitkernel" in args.peers:
        failed |= run_jitkernel_extras(res, args)
    md = save(res, args.out)
    print()
    print(md)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
