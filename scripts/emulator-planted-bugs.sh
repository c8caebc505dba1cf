#!/usr/bin/env bash
# Proves that the emulated CUDA device (feature `cuda-emulator`) can fail: plants
# one bug at a time in the kernels or the launch code, runs the emulated kernel
# suite, and checks that it fails, then restores the file. Run by hand (a few
# minutes: each bug rebuilds the emulator library or the crate):
#
#   scripts/emulator-planted-bugs.sh
#
# Prints a table: bug, caught or not, and the first failure message. Exits
# non-zero when some bug went unnoticed. Needs a clean checkout of the files it
# patches (they are restored from a copy after each run, also on Ctrl-C).
set -uo pipefail
cd "$(dirname "$0")/.."

# (--lib: the launch planning's unit tests, which see decisions the emulated sizes
# cannot reach, such as the index width of a view with offsets past 2^32.)
TEST=(cargo test -p autograd-kernels --features cuda-emulator --lib --test cuda_backend
    --test cuda_defects -- --include-ignored)

backup=""
file=""
restore() {
    if [ -n "$backup" ] && [ -f "$backup" ]; then
        cp "$backup" "$file"
        rm -f "$backup"
        backup=""
    fi
}
trap restore EXIT INT TERM

# plant NAME FILE PYTHON-REPLACEMENT(old, new)
results=()
missed=0
plant() {
    local name=$1 old=$3 new=$4
    file=$2
    backup=$(mktemp)
    cp "$file" "$backup"
    if ! python3 - "$file" "$old" "$new" <<'PY'
import sys
path, old, new = sys.argv[1:4]
s = open(path).read()
if old not in s:
    sys.exit(f"pattern not found in {path}: {old!r}")
open(path, "w").write(s.replace(old, new, 1))
PY
    then
        restore
        results+=("$name|NOT PLANTED (pattern missing)|")
        missed=$((missed + 1))
        return
    fi
    local log
    log=$(mktemp)
    local start=$SECONDS
    if "${TEST[@]}" >"$log" 2>&1; then
        results+=("$name|MISSED ($((SECONDS - start)) s)|the suite passed")
        missed=$((missed + 1))
    else
        local msg test
        # The first failing test, and its panic message (the line after "panicked
        # at", or a fatal error of the process).
        test=$(grep -m1 -E '^---- .* stdout ----$' "$log" | sed -E 's/^---- (.*) stdout ----$/\1/')
        msg=$(grep -m1 -A1 'panicked at' "$log" | tail -n1 | cut -c1-260)
        [ -z "$msg" ] && msg=$(grep -m1 -E 'fatal|error' "$log" | cut -c1-260)
        results+=("$name|caught by ${test:-?} ($((SECONDS - start)) s)|$msg")
    fi
    rm -f "$log"
    restore
}

CU=kernels/src/cuda
plant "removed __syncthreads (block_reduce)" "$CU/reduce.cu" \
    "        shared[warp] = v;
    }
    __syncthreads();" \
    "        shared[warp] = v;
    }"
plant "divergent barrier (block_reduce)" "$CU/reduce.cu" \
    "        shared[warp] = v;
    }
    __syncthreads();" \
    "        shared[warp] = v;
    }
    if (threadIdx.x < 128) __syncthreads();"
plant "stride off by one (strided_offset, outer axis)" "$CU/common.cuh" \
    "        off += i * (I)strides[0];" \
    "        off += i * ((I)strides[0] + 1);"
plant "stride off by one (Index2, second operand)" "$CU/common.cuh" \
    "        b += c * (I)ix.strides_b[d];" \
    "        b += c * ((I)ix.strides_b[d] + 1);"
plant "wrong ldc (matmul.rs)" "$CU/matmul.rs" \
    '        ldc: dim("n", n)?,' \
    '        ldc: dim("n", m)?,'
plant "missing grid-stride factor (GRID_LOOP)" "$CU/common.cuh" \
    'i += (u64)blockDim.x * gridDim.x)' \
    'i += (u64)blockDim.x)'
plant "reduction splits not launched (reduce.rs grid y = 1)" "$CU/reduce.rs" \
    "        grid: (lc.blocks_x as u32, lc.splits as u32, 1)," \
    "        grid: (lc.blocks_x as u32, 1, 1),"
plant "32-bit index path chosen from the element count alone (index.rs)" "$CU/index.rs" \
    "        .all(|l| l.numel() <= max && l.required_len() <= max)" \
    "        .all(|l| l.numel() <= max)"
plant "64-bit index path drops the view's offset (GRID_LOOP_OFFSETS1)" "$CU/common.cuh" \
    "            const u64 o = (ix).offset + strided_offset<u64>(" \
    "            const u64 o = strided_offset<u64>("
plant "f32 sum partials rounded to f32 at each split (partial_dtype)" "$CU/compile.rs" \
    "        ReduceOp::Sum => DType::F64," \
    "        ReduceOp::Sum => dtype,"
plant "few outputs: the lanes of each output not combined (reduce_few)" "$CU/reduce.cu" \
    "        for (unsigned l = 1; l < lanes; ++l) {" \
    "        for (unsigned l = 1; l < 1; ++l) {"
echo
echo "| planted bug | result | first message |"
echo "|---|---|---|"
for r in "${results[@]}"; do
    IFS='|' read -r a b c <<<"$r"
    echo "| $a | $b | ${c//|//} |"
done
[ "$missed" -eq 0 ]
