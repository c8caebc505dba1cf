#!/usr/bin/env bash
# Proves that the emulated CUDA device (feature `cuda-emulator`) can fail: plants
# one bug at a time in the kernels or the launch code, runs the emulated kernel
# suite, and checks that it fails, then restores the file. Run by hand (a few
# minutes: each bug rebuilds the emulator library or the crate):
#
#   scripts/emulator-planted-bugs.sh
#   scripts/emulator-planted-bugs.sh block_reduce   # only the bugs whose name has it
#   scripts/emulator-planted-bugs.sh --check        # the patterns only (CI runs it)
#
# Prints a table: bug, caught or not, and the first failure message. Exits
# non-zero when some bug went unnoticed. Needs a clean checkout of the files it
# patches (they are restored from a copy after each run, also on Ctrl-C).
#
# Every bug is a text replacement whose pattern must occur exactly once in its
# file: before running anything, the script checks all of them, and stops with an
# error naming each pattern that matches nothing (the code moved: fix the pattern)
# or several places, so that a stale pattern never reads as a bug the suite missed.
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

# The bugs, planted one at a time below: bug NAME FILE OLD NEW.
names=()
files=()
olds=()
news=()
bug() {
    names+=("$1")
    files+=("$2")
    olds+=("$3")
    news+=("$4")
}

# Exits (2) naming every pattern that does not occur exactly once in its file.
check_patterns() {
    local bad=0 k n
    for k in "${!names[@]}"; do
        n=$(python3 - "${files[$k]}" "${olds[$k]}" <<'PY'
import sys
path, old = sys.argv[1:3]
try:
    print(open(path).read().count(old))
except OSError:
    print(0)
PY
)
        if [ "$n" != 1 ]; then
            echo "emulator-planted-bugs.sh: the pattern of \"${names[$k]}\" occurs $n times" \
                "in ${files[$k]}, not once:" >&2
            printf '%s\n' "${olds[$k]}" | sed 's/^/    | /' >&2
            bad=$((bad + 1))
        fi
    done
    if [ "$bad" -gt 0 ]; then
        echo "emulator-planted-bugs.sh: $bad of ${#names[@]} bugs cannot be planted; fix" \
            "their patterns (the code they patch moved or changed). Nothing was run." >&2
        exit 2
    fi
}

# plant NAME FILE OLD NEW: the replacement, the suite, the file restored.
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
        # (check_patterns saw it; the file changed while the script ran.)
        echo "emulator-planted-bugs.sh: could not plant \"$name\": pattern missing" >&2
        exit 2
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
bug "removed __syncthreads (block_reduce)" "$CU/block_reduce.cuh" \
    "        shared[warp] = v;
    }
    __syncthreads();" \
    "        shared[warp] = v;
    }"
bug "divergent barrier (block_reduce)" "$CU/block_reduce.cuh" \
    "        shared[warp] = v;
    }
    __syncthreads();" \
    "        shared[warp] = v;
    }
    if (threadIdx.x < 128) __syncthreads();"
bug "stride off by one (strided_offset, outer axis)" "$CU/common.cuh" \
    "        off += i * (I)strides[0];" \
    "        off += i * ((I)strides[0] + 1);"
bug "stride off by one (Index2, second operand)" "$CU/common.cuh" \
    "        b += c * (I)ix.strides_b[d];" \
    "        b += c * ((I)ix.strides_b[d] + 1);"
bug "wrong ldc (matmul.rs)" "$CU/matmul.rs" \
    '        ldc: dim("n", n)?,' \
    '        ldc: dim("n", m)?,'
bug "missing grid-stride factor (GRID_LOOP)" "$CU/common.cuh" \
    'i += (u64)blockDim.x * gridDim.x)' \
    'i += (u64)blockDim.x)'
bug "reduction splits not launched (reduce.rs grid y = 1)" "$CU/reduce.rs" \
    "        grid: (lc.blocks_x as u32, lc.splits as u32, 1)," \
    "        grid: (lc.blocks_x as u32, 1, 1),"
bug "32-bit index path chosen from the element count alone (index.rs)" "$CU/index.rs" \
    "        .all(|l| l.numel() <= max && l.required_len() <= max)" \
    "        .all(|l| l.numel() <= max)"
bug "64-bit index path drops the view's offset (GRID_LOOP_OFFSETS1)" "$CU/common.cuh" \
    "            const u64 o = (ix).offset + strided_offset<u64>(" \
    "            const u64 o = strided_offset<u64>("
bug "f32 sum partials rounded to f32 at each split (partial_dtype)" "$CU/compile.rs" \
    "        ReduceOp::Sum => DType::F64," \
    "        ReduceOp::Sum => dtype,"
bug "few outputs: the lanes of each output not combined (reduce_few)" "$CU/reduce.cu" \
    "        for (unsigned l = 1; l < lanes; ++l) {" \
    "        for (unsigned l = 1; l < 1; ++l) {"

check_patterns
if [ "${1:-}" = "--check" ]; then
    echo "emulator-planted-bugs.sh: all ${#names[@]} patterns occur exactly once"
    exit 0
fi
ran=0
for k in "${!names[@]}"; do
    if [ $# -gt 0 ]; then
        wanted=0
        for f in "$@"; do
            [[ "${names[$k]}" == *"$f"* ]] && wanted=1
        done
        [ "$wanted" -eq 1 ] || continue
    fi
    plant "${names[$k]}" "${files[$k]}" "${olds[$k]}" "${news[$k]}"
    ran=$((ran + 1))
done
if [ "$ran" -eq 0 ]; then
    echo "emulator-planted-bugs.sh: no bug's name contains any of: $*" >&2
    exit 2
fi
echo
echo "$ran of ${#names[@]} bugs planted"
echo "| planted bug | result | first message |"
echo "|---|---|---|"
for r in "${results[@]}"; do
    IFS='|' read -r a b c <<<"$r"
    echo "| $a | $b | ${c//|//} |"
done
[ "$missed" -eq 0 ]
