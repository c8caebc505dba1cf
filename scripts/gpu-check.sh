#!/usr/bin/env bash
# The GPU check, in two halves, for GPU machines that have CUDA, NVRTC and
# PyTorch but no Rust toolchain:
#
#   scripts/gpu-check.sh build [DIR]    on a machine with cargo (no GPU needed):
#                                       builds the GPU test binaries, the W2/W3
#                                       timing binary, the layer_norm and cnn
#                                       examples (release) into DIR, with this
#                                       script and
#                                       the PyTorch peer script
#                                       (default DIR: target/gpu-bundle)
#   DIR/gpu-check.sh run                on the GPU machine: a smoke test first
#                                       (a small model there and back; nothing else
#                                       runs if it fails), the NVRTC check, every
#                                       #[ignore]d GPU test, the layer_norm and
#                                       cnn examples with --cuda, W2/W3 at their
#                                       GPU sizes here and in PyTorch with the
#                                       figures side by side, and, where the
#                                       machine has compute-sanitizer, memcheck
#                                       and racecheck over the defect tests
#
# Every step has a time limit (GPU_CHECK_SCALE=2 doubles them all); a step that
# passes it is killed and reported as timed out, and the run goes on. `run` exits
# non-zero when a step fails. Set GPU_CHECK_LOG=FILE to keep the whole output. It
# takes a few minutes (most of it W3's 268M-element tensors).
set -euo pipefail

usage() {
    sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}

build() {
    local root out
    root=$(cd "$(dirname "$0")/.." && pwd)
    out=${1:-$root/target/gpu-bundle}
    cd "$root"
    rm -rf "$out"
    mkdir -p "$out/bin"
    # Test binaries: cargo names them with a hash; its JSON messages say where.
    local list
    list=$(mktemp)
    {
        cargo test --release --no-run --message-format=json -p autograd --test gpu
        cargo test --release --no-run --message-format=json -p autograd-kernels \
            --test cuda_backend --test cuda_defects --test nvrtc
    } | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])
' >"$list"
    while read -r name exe; do
        cp "$exe" "$out/bin/$name"
    done <"$list"
    rm -f "$list"
    cargo build --release --example gpu_workloads --example layer_norm --example cnn
    cp target/release/examples/gpu_workloads target/release/examples/layer_norm \
        target/release/examples/cnn "$out/bin/"
    for b in gpu cuda_backend cuda_defects nvrtc gpu_workloads layer_norm cnn; do
        [ -x "$out/bin/$b" ] || { echo "gpu-check build: $b was not built" >&2; exit 1; }
        # Debug info and symbols are most of their size, and the device tool carries
        # 64 MiB at most (the bundle grew past it with strip --strip-debug alone); a
        # panic's message still says what failed, only backtraces lose their names.
        if command -v strip >/dev/null; then strip --strip-all "$out/bin/$b"; fi
    done
    cp scripts/gpu-check.sh scripts/gpu_peer.py "$out/"
    echo "bundle: $out ($(du -sh "$out" | cut -f1))"
    echo "on the GPU machine: $out/gpu-check.sh run"
}

# Folders holding the CUDA libraries cudarc loads at run time (libcuda from the
# driver, libnvrtc and libcublas from the toolkit or PyTorch's pip packages).
cuda_lib_path() {
    local dirs=() d
    for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/local/cuda/lib64 \
        /usr/local/cuda/targets/x86_64-linux/lib; do
        [ -d "$d" ] && dirs+=("$d")
    done
    if command -v python3 >/dev/null; then
        while read -r d; do
            [ -n "$d" ] && dirs+=("$d")
        done < <(python3 -c '
import glob, os, site, sys
seen = []
for base in list(sys.path) + site.getsitepackages():
    for d in sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib"))):
        if d not in seen:
            seen.append(d)
print("\n".join(seen))
' 2>/dev/null || true)
    fi
    local IFS=:
    echo "${dirs[*]}"
}

# step NAME SECONDS COMMAND..: runs COMMAND under a time limit (scaled by
# GPU_CHECK_SCALE), saying how long it took and whether it timed out.
step() {
    local name=$1 limit=$2 start rc=0
    shift 2
    limit=$((limit * ${GPU_CHECK_SCALE:-1}))
    echo "== $name (limit ${limit} s)"
    start=$SECONDS
    timeout --kill-after=15 "$limit" "$@" || rc=$?
    case $rc in
        0) echo "-- $name: passed in $((SECONDS - start)) s" ;;
        124 | 137) echo "-- $name: TIMED OUT after ${limit} s" ;;
        *) echo "-- $name: FAILED (exit $rc) after $((SECONDS - start)) s" ;;
    esac
    return "$rc"
}

# The CUDA libraries on the search path, by file (their names carry versions);
# gpu_workloads prints the ones the process actually loaded (LIBRARY lines).
list_libraries() {
    local IFS=: d
    for d in $LD_LIBRARY_PATH; do
        [ -d "$d" ] || continue
        find "$d" -maxdepth 1 \( -name 'libcuda.so*' -o -name 'libnvrtc.so*' \
            -o -name 'libcublas.so*' -o -name 'libcublasLt.so*' \) -printf '%p\n' 2>/dev/null
    done | sort -u
}

run() {
    local here bin status=0 tmp
    here=$(cd "$(dirname "$0")" && pwd)
    bin=$here/bin
    if [ ! -d "$bin" ]; then
        bin=$(cd "$here/.." && pwd)/target/gpu-bundle/bin
    fi
    [ -d "$bin" ] || { echo "no bundle found: run 'scripts/gpu-check.sh build' first" >&2; exit 2; }
    [ -f "$here/gpu_peer.py" ] || here=$(cd "$bin/.." && pwd)
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(cuda_lib_path)"
    export AUTOGRAD_REQUIRE_NVRTC=1 RUST_BACKTRACE=1
    tmp=$(mktemp -d)

    echo "== machine"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
        echo "(nvidia-smi unavailable)"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    echo "CUDA libraries on that path:"
    list_libraries | sed 's/^/  /'

    # A small model forward and backward on the GPU, against the CPU: the driver, a
    # context, NVRTC, kernel launches, cuBLAS, copies back. If this fails nothing
    # else can pass. (A test that needs the GPU: with none it fails.)
    if ! step "smoke: one small model on the GPU and back" 30 "$bin/gpu" --ignored --exact \
        engine::forward_and_backward_stay_on_the_device; then
        echo "== gpu-check: the smoke test failed; nothing else was run"
        return 1
    fi
    step "NVRTC: every kernel source compiles, every launched kernel is defined" 300 \
        "$bin/nvrtc" --nocapture || status=1
    step "kernels: every CUDA primitive against the CPU" 600 \
        "$bin/cuda_backend" --ignored --test-threads=2 || status=1
    step "the review's defects, on the real device" 600 \
        "$bin/cuda_defects" --include-ignored || status=1
    step "every registered op (forward and backward), worked examples, engine, W2/W3 parity" 1200 \
        "$bin/gpu" --include-ignored --test-threads=2 || status=1
    step "an op with its own kernels (raw CPU kernel and CUDA program): layer_norm" 120 \
        "$bin/layer_norm" --cuda || status=1
    step "convolution and pooling (im2col/col2im CUDA kernels, cuBLAS): the cnn example" 300 \
        "$bin/cnn" --cuda || status=1

    step "W2 and W3 at GPU sizes: autograd" 300 \
        bash -c '"$1" | tee "$2"' _ "$bin/gpu_workloads" "$tmp/results" || status=1
    echo "== the same in PyTorch"
    if command -v python3 >/dev/null && python3 -c 'import torch' 2>/dev/null; then
        step "W2 and W3 at GPU sizes: PyTorch" 300 \
            bash -c 'python3 "$1" | tee -a "$2"' _ "$here/gpu_peer.py" "$tmp/results" || status=1
    else
        echo "(python3 with torch not found: no peer figures)"
    fi

    if command -v compute-sanitizer >/dev/null; then
        # Out-of-bounds and misaligned accesses, then shared-memory races, over the
        # defect tests (the kernels' edge cases), one thread at a time.
        step "compute-sanitizer memcheck: the defect tests" 900 \
            compute-sanitizer --tool memcheck --error-exitcode 99 \
            "$bin/cuda_defects" --include-ignored --test-threads=1 || status=1
        step "compute-sanitizer racecheck: the defect tests" 900 \
            compute-sanitizer --tool racecheck --error-exitcode 99 \
            "$bin/cuda_defects" --include-ignored --test-threads=1 || status=1
    else
        echo "== compute-sanitizer: not on this machine (memcheck and racecheck not run)"
    fi

    grep '^LIBRARY ' "$tmp/results" | sed 's/^LIBRARY /loaded by gpu_workloads: /' || true
    echo "== figures (median of 10 after 3 warm-ups, ms; ratio = autograd / PyTorch)"
    python3 - "$tmp/results" <<'PY' || true
import sys
rows = {}
for line in open(sys.argv[1]):
    if line.startswith("RESULT "):
        _, work, impl, *kv = line.split()
        rows.setdefault(work, {})[impl] = dict(p.split("=", 1) for p in kv)
def get(work, impl, key):
    try:
        return float(rows[work][impl][key])
    except (KeyError, ValueError):
        return None
fmt = lambda v, spec: "-" if v is None else format(v, spec)
print(f"{'workload':<10}{'autograd':>12}{'PyTorch':>12}{'ratio':>8}")
for work in ("W2", "W3"):
    a, p = get(work, "autograd", "median_ms"), get(work, "pytorch", "median_ms")
    ratio = a / p if a and p else None
    print(f"{work:<10}{fmt(a, '.3f'):>12}{fmt(p, '.3f'):>12}{fmt(ratio, '.2f'):>8}")
# (W3 is timed with its loss and gradient computed: gpu_workloads realizes what a
# step returns, so a fused chain is not left deferred and dropped unread.)
copy = get("COPY", "pytorch", "gbps") or get("COPY", "autograd", "gbps")
n = get("W3", "autograd", "elements") or get("W3", "pytorch", "elements")
print(f"copy bandwidth (read + write, GB/s): autograd {fmt(get('COPY', 'autograd', 'gbps'), '.0f')}, "
      f"PyTorch {fmt(get('COPY', 'pytorch', 'gbps'), '.0f')}")
if copy and n:
    # W3 must at least read x and a and write grad x: 12 bytes per element.
    for impl in ("autograd", "pytorch"):
        ms = get("W3", impl, "median_ms")
        if ms:
            frac = 12 * n / (ms * 1e-3) / 1e9 / copy
            print(f"W3 {impl}: {frac:.1%} of the measured copy bandwidth (12 B/element minimum)")
PY
    rm -rf "$tmp"
    if [ "$status" -eq 0 ]; then echo "== gpu-check: all passed"; else echo "== gpu-check: FAILURES above"; fi
    return "$status"
}

main() {
    case "${1:-}" in
        build) shift; build "$@" ;;
        run) run ;;
        *) usage ;;
    esac
}

if [ -n "${GPU_CHECK_LOG:-}" ]; then
    main "$@" 2>&1 | tee "$GPU_CHECK_LOG"
    exit "${PIPESTATUS[0]}"
fi
main "$@"
