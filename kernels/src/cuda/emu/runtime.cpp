// The CUDA emulator's runtime (feature `cuda-emulator`, tests only): device
// memory, kernel launches and cuBLAS's gemm, on the host.
//
// Memory: every buffer is its own mapping, its bytes ending exactly where an
// inaccessible page begins, with another inaccessible page before it; the bytes
// between that page and the buffer's start hold a canary, checked after every
// launch. A kernel that reads or writes past either end faults, and the fault is
// reported as an error of the launch naming the kernel, the block and thread, and
// where the address lies. New buffers are filled with 0xff bytes (a NaN in both
// dtypes), so an element a kernel forgets to write shows. Freed buffers go to a
// pool (made inaccessible) when the pool's release threshold allows, and the
// device has a capacity: allocations fail when live and pooled mappings would
// exceed it, as on a GPU whose memory a pool keeps.
//
// Launches: each CUDA thread is a fiber (its own stack, emu_switch); a block's fibers run on the
// calling host thread until they finish or wait at a barrier (__syncthreads,
// __shfl_down_sync); a barrier that some threads never reach is reported as a
// deadlock (or a divergent barrier). Input buffers are read-only during the
// launch. Each launch runs under several schedules (block orders, fiber orders,
// fewer blocks with the grid-stride loops doing the rest) from the same memory,
// and the outputs must agree: races between blocks and missing barriers show up
// as schedule-dependent results.
//
// The kernel entry points are called through function pointers of the ABI the
// backend launches them with (compile.rs, kernel_params): device pointers travel
// as 64-bit integers, the index structs by value (x86-64 System V).
#include "shim.h"

#include "../common.cuh"
#include "../../raw.cuh"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <ucontext.h>  // the faulting access's kind (REG_ERR)
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

__thread const EmuLane* emu_lane __attribute__((tls_model("initial-exec")));

namespace {

size_t page_size() {
    static const size_t p = (size_t)sysconf(_SC_PAGESIZE);
    return p;
}

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

std::string format(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

void set_err(char* err, size_t len, const std::string& msg) {
    if (err && len) {
        snprintf(err, len, "%s", msg.c_str());
    }
}

// ---------------------------------------------------------------- memory

const unsigned char CANARY = 0xa5;

struct Allocation {
    char* map = nullptr;   // the whole mapping, guard pages included
    size_t map_len = 0;
    char* data = nullptr;  // the buffer: its last byte is the last accessible one
    size_t bytes = 0;
    bool read_only = false;
};

std::mutex mem_mu;
std::map<uintptr_t, Allocation> live;       // by data address
std::multimap<size_t, Allocation> pooled;   // freed, kept, by mapping length
size_t live_bytes = 0, pooled_bytes = 0;
uint64_t capacity = 64ull << 30;
uint64_t release_threshold = 0;

// The allocation whose mapping holds `addr`, live or pooled; `*freed` says which.
const Allocation* find_mapping(uintptr_t addr, bool* freed) {
    auto it = live.upper_bound(addr);
    if (it != live.begin()) {
        --it;
        const Allocation& a = it->second;
        if (addr >= (uintptr_t)a.map && addr < (uintptr_t)a.map + a.map_len) {
            *freed = false;
            return &a;
        }
    }
    for (auto& p : pooled) {
        const Allocation& a = p.second;
        if (addr >= (uintptr_t)a.map && addr < (uintptr_t)a.map + a.map_len) {
            *freed = true;
            return &a;
        }
    }
    return nullptr;
}

std::string describe_address(uintptr_t addr);

// ---------------------------------------------------------------- fibers

enum State { RUNNABLE, WAIT_BLOCK, WAIT_WARP, DONE };

// Context switch: saves the callee-saved registers (and the SSE and x87 control
// words) on the current stack, stores its pointer in *from, switches to `to`
// and restores what is there. Much cheaper than swapcontext, which makes a
// system call for the signal mask at every switch.
extern "C" void emu_switch(void** from, void* to);
asm(R"(
    .text
    .p2align 4
    .globl emu_switch
    .hidden emu_switch
    .type emu_switch, @function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_switch, .-emu_switch
)");

struct Fiber {
    void* sp;  // saved stack pointer while switched out
    EmuLane lane;
    State state;
    const char* file;
    int line;
    unsigned char shfl[8];
    unsigned shfl_size;
    int shfl_delta;
    unsigned shfl_mask;
};

const size_t STACK = 64 * 1024;

struct Stacks {
    std::vector<char*> maps;  // each: one guard page, then STACK bytes
    ~Stacks() {
        for (char* m : maps) munmap(m, STACK + page_size());
    }
};

thread_local Stacks t_stacks;
thread_local std::vector<Fiber> t_fibers;

// The scheduler's per-thread state, read at every switch: initial-exec TLS (a
// plain %fs-relative access, where the default model for a shared library calls
// __tls_get_addr each time).
#define EMU_TLS __thread __attribute__((tls_model("initial-exec")))
EMU_TLS Fiber* t_cur = nullptr;
EMU_TLS void* t_sched_sp = nullptr;
EMU_TLS void (*t_invoke)(const void*) = nullptr;
EMU_TLS const void* t_invoke_arg = nullptr;

// Faults: the handler jumps back to the launch that was running.
EMU_TLS sigjmp_buf* t_fault_jmp = nullptr;
EMU_TLS uintptr_t t_fault_addr = 0;
EMU_TLS int t_fault_write = -1;

struct sigaction old_segv, old_bus;
std::once_flag handler_once;

void on_fault(int sig, siginfo_t* si, void* uc) {
    if (t_fault_jmp) {
        t_fault_addr = (uintptr_t)si->si_addr;
#if defined(__x86_64__)
        t_fault_write = (((ucontext_t*)uc)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#else
        t_fault_write = -1;
#endif
        sigjmp_buf* j = t_fault_jmp;
        t_fault_jmp = nullptr;
        siglongjmp(*j, 1);
    }
    // Not ours: whoever handled it before (Rust's stack overflow handler), or the
    // default action.
    struct sigaction* old = sig == SIGSEGV ? &old_segv : &old_bus;
    if (old->sa_flags & SA_SIGINFO) {
        old->sa_sigaction(sig, si, uc);
        return;
    }
    if (old->sa_handler == SIG_DFL || old->sa_handler == SIG_IGN) {
        signal(sig, SIG_DFL);
        return;  // the access faults again, with the default action
    }
    old->sa_handler(sig);
}

void install_handler() {
    std::call_once(handler_once, [] {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &old_segv);
        sigaction(SIGBUS, &sa, &old_bus);
    });
}

void ensure_stacks(size_t n) {
    while (t_stacks.maps.size() < n) {
        const size_t len = STACK + page_size();
        void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            throw std::bad_alloc();
        }
        mprotect(m, page_size(), PROT_NONE);  // stack overflow guard (stacks grow down)
        t_stacks.maps.push_back((char*)m);
    }
}

bool in_stack_guard(uintptr_t addr) {
    for (char* m : t_stacks.maps) {
        if (addr >= (uintptr_t)m && addr < (uintptr_t)m + page_size()) return true;
    }
    return false;
}

void fiber_entry() {
    t_invoke(t_invoke_arg);
    t_cur->state = DONE;
    emu_switch(&t_cur->sp, t_sched_sp);
    abort();  // a finished fiber is never resumed
}

// A fresh fiber's stack, as emu_switch leaves a switched-out one: control words,
// six registers, then fiber_entry as the return address (with a null return
// address above it, for fiber_entry's own frame, 16-byte aligned as a call is).
void* fresh_stack(char* base, size_t size) {
    uintptr_t top = ((uintptr_t)base + size) & ~(uintptr_t)15;
    uint64_t* sp = (uint64_t*)top;
    *--sp = 0;                               // fiber_entry's return address
    *--sp = (uint64_t)(uintptr_t)fiber_entry; // where emu_switch returns to
    for (int r = 0; r < 6; ++r) *--sp = 0;  // rbp, rbx, r12-r15
    --sp;
    const uint32_t mxcsr = 0x1f80;
    const uint16_t fpucw = 0x037f;
    memcpy(sp, &mxcsr, 4);
    memcpy((char*)sp + 4, &fpucw, 2);
    return sp;
}

void wait_here(State s, const char* file, int line) {
    Fiber* f = t_cur;
    if (!f) {
        fprintf(stderr, "CUDA emulator: a barrier outside a kernel\n");
        abort();
    }
    f->state = s;
    f->file = file;
    f->line = line;
    emu_switch(&f->sp, t_sched_sp);
    emu_lane = &f->lane;
}

// ---------------------------------------------------------------- scheduling

enum Pick { SWEEP_FORWARD, SWEEP_REVERSE, RANDOM, LOWEST_FIRST };
enum BlockOrder { BLOCKS_FORWARD, BLOCKS_REVERSE, BLOCKS_SHUFFLED };

struct Schedule {
    const char* name;
    BlockOrder order;
    Pick pick;
    unsigned max_grid_x;  // 0: the launch's grid; else at most this many blocks in x
};

// Blocks are independent on a GPU and the backend's kernels are grid-stride
// loops in x, so each of these must give the same result.
const Schedule SCHEDULES[] = {
    {"forward", BLOCKS_FORWARD, SWEEP_FORWARD, 0},
    {"reverse", BLOCKS_REVERSE, SWEEP_REVERSE, 0},
    {"shuffled", BLOCKS_SHUFFLED, RANDOM, 0},
    {"warp-greedy", BLOCKS_FORWARD, LOWEST_FIRST, 0},
    {"one block (grid-stride)", BLOCKS_FORWARD, RANDOM, 1},
    {"three blocks", BLOCKS_REVERSE, LOWEST_FIRST, 3},
};
const unsigned N_SCHEDULES = sizeof SCHEDULES / sizeof SCHEDULES[0];

// A set of fiber indices as a bitmap.
struct Runnable {
    std::vector<uint64_t> w;
    size_t n;
    explicit Runnable(size_t n) : w((n + 63) / 64, ~0ull), n(n) {
        if (n % 64) w.back() = (1ull << (n % 64)) - 1;
    }
    void set(size_t i) { w[i / 64] |= 1ull << (i % 64); }
    void clear(size_t i) { w[i / 64] &= ~(1ull << (i % 64)); }
    // The first member at or after `from`, wrapping around; -1 when empty.
    long next_from(size_t from) const {
        const size_t words = w.size();
        size_t k = from / 64;
        uint64_t bits = w[k] & (~0ull << (from % 64));
        for (size_t step = 0; step <= words; ++step) {
            if (bits) return (long)(k * 64 + __builtin_ctzll(bits));
            k = (k + 1) % words;
            bits = w[k];
        }
        return -1;
    }
    // The last member at or before `from`, wrapping around; -1 when empty.
    long prev_from(size_t from) const {
        const size_t words = w.size();
        size_t k = from / 64;
        const unsigned b = from % 64;
        uint64_t bits = w[k] & (b == 63 ? ~0ull : ((1ull << (b + 1)) - 1));
        for (size_t step = 0; step <= words; ++step) {
            if (bits) return (long)(k * 64 + 63 - __builtin_clzll(bits));
            k = (k + words - 1) % words;
            bits = w[k];
        }
        return -1;
    }
};

std::string where(const Fiber& f) {
    return format("block (%u,%u,%u) thread (%u,%u,%u)", f.lane.block_idx.x, f.lane.block_idx.y,
                  f.lane.block_idx.z, f.lane.thread_idx.x, f.lane.thread_idx.y,
                  f.lane.thread_idx.z);
}

// Runs one block; an empty string on success, else what went wrong.
std::string run_block(uint3 bidx, dim3 grid, dim3 block, Pick pick, std::mt19937_64& rng) {
    const size_t n = (size_t)block.x * block.y * block.z;
    ensure_stacks(n);
    std::vector<Fiber>& fs = t_fibers;
    fs.resize(n);
    for (size_t i = 0; i < n; ++i) {
        Fiber& f = fs[i];
        f.sp = fresh_stack(t_stacks.maps[i] + page_size(), STACK);
        f.lane.thread_idx = {(unsigned)(i % block.x), (unsigned)(i / block.x % block.y),
                             (unsigned)(i / ((size_t)block.x * block.y))};
        f.lane.block_idx = bidx;
        f.lane.block_dim = block;
        f.lane.grid_dim = grid;
        f.state = RUNNABLE;
        f.file = nullptr;
        f.line = 0;
    }
    size_t done = 0, at_block = 0, cursor = pick == SWEEP_REVERSE ? n - 1 : 0;
    const size_t warps = (n + 31) / 32;
    std::vector<unsigned> at_warp(warps, 0);
    // The runnable fibers, one bit each: every policy finds its next one in at
    // most n / 64 word scans.
    Runnable run(n);
    for (;;) {
        long next = -1;
        switch (pick) {
        case SWEEP_FORWARD:
            next = run.next_from(cursor);
            if (next >= 0) cursor = ((size_t)next + 1) % n;
            break;
        case SWEEP_REVERSE:
            next = run.prev_from(cursor);
            if (next >= 0) cursor = ((size_t)next + n - 1) % n;
            break;
        case RANDOM:
            next = run.next_from(rng() % n);
            break;
        case LOWEST_FIRST:
            next = run.next_from(0);
            break;
        }
        if (next < 0) {
            if (done == n) return "";
            // Nothing can run and some fibers wait: a barrier some never reach.
            for (size_t i = 0; i < n; ++i) {
                const Fiber& f = fs[i];
                if (f.state == WAIT_WARP) {
                    return format(
                        "deadlock: %s waits at __shfl_down_sync (%s:%d) for lanes of its warp "
                        "that exited or wait at __syncthreads (a warp shuffle in divergent code)",
                        where(f).c_str(), f.file, f.line);
                }
            }
            for (size_t i = 0; i < n; ++i) {
                const Fiber& f = fs[i];
                if (f.state == WAIT_BLOCK) {
                    return format(
                        "deadlock: __syncthreads (%s:%d) reached by %zu of the block's %zu "
                        "threads (e.g. %s); the other %zu exited without reaching it (a "
                        "barrier in divergent code)",
                        f.file, f.line, at_block, n, where(f).c_str(), n - at_block);
                }
            }
            return "deadlock: no thread can run";
        }
        Fiber& f = fs[(size_t)next];
        t_cur = &f;
        emu_lane = &f.lane;
        emu_switch(&t_sched_sp, f.sp);
        t_cur = nullptr;
        emu_lane = nullptr;
        run.clear((size_t)next);
        const size_t w = (size_t)next / 32;
        const size_t w0 = w * 32, wn = std::min<size_t>(32, n - w0);
        switch (f.state) {
        case DONE:
            ++done;
            if (at_warp[w] > 0) {
                return format("%s exited while lanes of its warp wait at __shfl_down_sync: a "
                              "warp shuffle in divergent code",
                              where(f).c_str());
            }
            break;
        case WAIT_WARP:
            if (++at_warp[w] == wn) {
                // Every lane arrived: exchange, then release the warp.
                for (size_t l = 0; l < wn; ++l) {
                    const Fiber& g = fs[w0 + l];
                    if (g.file != f.file || g.line != f.line || g.shfl_delta != f.shfl_delta ||
                        g.shfl_mask != f.shfl_mask) {
                        return format("divergent warp: %s is at __shfl_down_sync (%s:%d), %s at "
                                      "%s:%d (or with another delta or mask)",
                                      where(f).c_str(), f.file, f.line, where(g).c_str(), g.file,
                                      g.line);
                    }
                }
                const unsigned want = wn == 32 ? 0xffffffffu : ((1u << wn) - 1);
                if ((f.shfl_mask & want) != want) {
                    return format("__shfl_down_sync (%s:%d) with mask %#x leaves out lanes of a "
                                  "warp that all execute it",
                                  f.file, f.line, f.shfl_mask);
                }
                unsigned char vals[32][8];
                for (size_t l = 0; l < wn; ++l) memcpy(vals[l], fs[w0 + l].shfl, 8);
                for (size_t l = 0; l < wn; ++l) {
                    Fiber& g = fs[w0 + l];
                    const size_t src = l + (size_t)g.shfl_delta;
                    if (g.shfl_delta >= 0 && src < wn) memcpy(g.shfl, vals[src], 8);
                    g.state = RUNNABLE;
                    run.set(w0 + l);
                }
                at_warp[w] = 0;
            }
            break;
        case WAIT_BLOCK:
            if (++at_block == n) {
                for (size_t i = 0; i < n; ++i) {
                    if (fs[i].file != f.file || fs[i].line != f.line) {
                        return format("divergent barrier: %s waits at __syncthreads (%s:%d), "
                                      "%s at %s:%d",
                                      where(f).c_str(), f.file, f.line, where(fs[i]).c_str(),
                                      fs[i].file, fs[i].line);
                    }
                }
                for (size_t i = 0; i < n; ++i) {
                    fs[i].state = RUNNABLE;
                    run.set(i);
                }
                at_block = 0;
            }
            break;
        case RUNNABLE:
            run.set((size_t)next);
            break;
        }
    }
}

// ---------------------------------------------------------------- kernel ABI

enum ArgKind : uint32_t { U64 = 0, F64 = 1, IX1 = 2, IX2 = 3, IXR = 4, IN = 5, OUT = 6, RAW = 7 };

struct EmuArg {
    uint32_t kind;
    uint32_t elem;      // element size of a buffer (1, 2, 4 or 8), | EXACT_ELEM for integer bits
    const void* value;  // the value; for a buffer, its u64 device address
};

enum Sig { S_UNARY, S_COPY, S_BINARY, S_REDUCE, S_FILL, S_CAST, S_GENERATED, S_RAW, S_FUSED, S_UNKNOWN };

Sig signature(const std::string& s) {
    if (s == "u1ppd") return S_UNARY;
    if (s == "u2pp") return S_COPY;  // binary_assign, copy, copy_add, copy_atomic_add
    if (s == "u2ppp") return S_BINARY;
    if (s == "uuuRpp") return S_REDUCE;
    if (s == "upd") return S_FILL;
    if (s == "u1pp") return S_CAST;
    // An op generated from an elementwise function: n, what, x0..x3, g, out, p0..p3.
    if (s == "uuppppppdddd") return S_GENERATED;
    // A raw program's entry point: RAW_PARAMS (raw.cuh), the struct then 8 input
    // and 4 output pointers.
    if (s == "Wpppppppppppp") return S_RAW;
    // A fused chain (cuda/fused.rs): n, chunk, 8 leaf pointers, 4 result
    // pointers, 16 scalars.
    if (s == "uuppppppppppppdddddddddddddddd") return S_FUSED;
    return S_UNKNOWN;
}

struct Call {
    void* fn;
    const EmuArg* args;
    uint32_t nargs;
    std::string sig;
    Sig kind;
};

template <typename T>
T arg(const EmuArg& a) {
    T v;
    memcpy(&v, a.value, sizeof v);
    return v;
}

void invoke(const void* p) {
    const Call& c = *(const Call*)p;
    const EmuArg* a = c.args;
    switch (c.kind) {
    case S_UNARY:
        ((void (*)(u64, Index1, u64, u64, double))c.fn)(arg<u64>(a[0]), arg<Index1>(a[1]),
                                                         arg<u64>(a[2]), arg<u64>(a[3]),
                                                         arg<double>(a[4]));
        break;
    case S_COPY:
        ((void (*)(u64, Index2, u64, u64))c.fn)(arg<u64>(a[0]), arg<Index2>(a[1]),
                                                 arg<u64>(a[2]), arg<u64>(a[3]));
        break;
    case S_BINARY:
        ((void (*)(u64, Index2, u64, u64, u64))c.fn)(arg<u64>(a[0]), arg<Index2>(a[1]),
                                                      arg<u64>(a[2]), arg<u64>(a[3]),
                                                      arg<u64>(a[4]));
        break;
    case S_REDUCE:
        ((void (*)(u64, u64, u64, ReduceIndex, u64, u64))c.fn)(
            arg<u64>(a[0]), arg<u64>(a[1]), arg<u64>(a[2]), arg<ReduceIndex>(a[3]),
            arg<u64>(a[4]), arg<u64>(a[5]));
        break;
    case S_FILL:
        ((void (*)(u64, u64, double))c.fn)(arg<u64>(a[0]), arg<u64>(a[1]), arg<double>(a[2]));
        break;
    case S_CAST:
        ((void (*)(u64, Index1, u64, u64))c.fn)(arg<u64>(a[0]), arg<Index1>(a[1]),
                                                 arg<u64>(a[2]), arg<u64>(a[3]));
        break;
    case S_GENERATED:
        ((void (*)(u64, u64, u64, u64, u64, u64, u64, u64, double, double, double, double))c.fn)(
            arg<u64>(a[0]), arg<u64>(a[1]), arg<u64>(a[2]), arg<u64>(a[3]), arg<u64>(a[4]),
            arg<u64>(a[5]), arg<u64>(a[6]), arg<u64>(a[7]), arg<double>(a[8]),
            arg<double>(a[9]), arg<double>(a[10]), arg<double>(a[11]));
        break;
    case S_FUSED:
        ((void (*)(u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, double, double, double, double, double, double, double, double, double, double, double, double, double, double, double, double))c.fn)(arg<u64>(a[0]), arg<u64>(a[1]), arg<u64>(a[2]), arg<u64>(a[3]), arg<u64>(a[4]), arg<u64>(a[5]), arg<u64>(a[6]), arg<u64>(a[7]), arg<u64>(a[8]), arg<u64>(a[9]), arg<u64>(a[10]), arg<u64>(a[11]), arg<u64>(a[12]), arg<u64>(a[13]), arg<double>(a[14]), arg<double>(a[15]), arg<double>(a[16]), arg<double>(a[17]), arg<double>(a[18]), arg<double>(a[19]), arg<double>(a[20]), arg<double>(a[21]), arg<double>(a[22]), arg<double>(a[23]), arg<double>(a[24]), arg<double>(a[25]), arg<double>(a[26]), arg<double>(a[27]), arg<double>(a[28]), arg<double>(a[29]));
        break;
    case S_RAW:
        ((void (*)(RawParams, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64))c.fn)(
            arg<RawParams>(a[0]), arg<u64>(a[1]), arg<u64>(a[2]), arg<u64>(a[3]), arg<u64>(a[4]),
            arg<u64>(a[5]), arg<u64>(a[6]), arg<u64>(a[7]), arg<u64>(a[8]), arg<u64>(a[9]),
            arg<u64>(a[10]), arg<u64>(a[11]), arg<u64>(a[12]));
        break;
    case S_UNKNOWN:
        break;
    }
}

struct Buffer {
    Allocation a;
    uint32_t elem;
    bool out;
    bool exact;
};

// Set in an argument's `elem` (mod.rs's EXACT) for integer elements and 16-bit
// float patterns: compared bit for bit between schedules.
const uint32_t EXACT_ELEM = 0x100;

bool close_enough(const unsigned char* x, const unsigned char* y, uint32_t elem, bool exact,
                  size_t i, std::string* msg) {
    double a, b, rtol, atol;
    if (exact || (elem != 4 && elem != 8)) {
        if (memcmp(x + i * elem, y + i * elem, elem) == 0) return true;
        unsigned long long va = 0, vb = 0;
        memcpy(&va, x + i * elem, elem);
        memcpy(&vb, y + i * elem, elem);
        *msg = format("element %zu has the bits 0x%llx, under the first schedule 0x%llx", i, vb,
                      va);
        return false;
    }
    if (elem == 4) {
        float fa, fb;
        memcpy(&fa, x + i * 4, 4);
        memcpy(&fb, y + i * 4, 4);
        a = fa, b = fb, rtol = 1e-5, atol = 1e-6;
    } else {
        memcpy(&a, x + i * 8, 8);
        memcpy(&b, y + i * 8, 8);
        rtol = 1e-12, atol = 1e-13;
    }
    if ((a != a && b != b) || a == b || fabs(a - b) <= atol + rtol * fabs(a)) return true;
    *msg = format("element %zu is %.17g, under the first schedule %.17g", i, b, a);
    return false;
}

}  // namespace

// ---------------------------------------------------------------- barriers

// The running block's dynamic shared memory (`extern __shared__`; programs
// compiled at run time declare it through this, see `dynamic_shared` in mod.rs).
thread_local unsigned char* t_dyn_shared = nullptr;
extern "C" void* emu_dynamic_shared() { return t_dyn_shared; }

extern "C" void emu_syncthreads(const char* file, int line) { wait_here(WAIT_BLOCK, file, line); }

extern "C" void emu_shfl_down(unsigned mask, void* value, unsigned size, int delta,
                              const char* file, int line) {
    Fiber* f = t_cur;
    memset(f->shfl, 0, 8);
    memcpy(f->shfl, value, size);
    f->shfl_size = size;
    f->shfl_delta = delta;
    f->shfl_mask = mask;
    wait_here(WAIT_WARP, file, line);
    memcpy(value, f->shfl, size);
}

namespace {

std::string describe_address(uintptr_t addr) {
    if (in_stack_guard(addr)) return "a stack overflow in the kernel";
    std::lock_guard<std::mutex> g(mem_mu);
    bool freed = false;
    const Allocation* a = find_mapping(addr, &freed);
    if (!a) return format("address %#lx, outside every device buffer", (unsigned long)addr);
    const uintptr_t d = (uintptr_t)a->data;
    if (freed) return format("an address in a freed buffer of %zu bytes", a->bytes);
    if (addr >= d + a->bytes) {
        return format("%zu bytes past the end of a buffer of %zu bytes", (size_t)(addr - d - a->bytes),
                      a->bytes);
    }
    if (addr < d) {
        return format("%zu bytes before the start of a buffer of %zu bytes", (size_t)(d - addr),
                      a->bytes);
    }
    if (a->read_only) {
        return format("byte %zu of an input buffer of %zu bytes (inputs are const: a kernel "
                      "writing its input)",
                      (size_t)(addr - d), a->bytes);
    }
    return format("byte %zu of a buffer of %zu bytes", (size_t)(addr - d), a->bytes);
}

std::string fault_message() {
    const char* rw = t_fault_write == 1 ? "write" : t_fault_write == 0 ? "read" : "access";
    return format("invalid %s (out of bounds): %s", rw, describe_address(t_fault_addr).c_str());
}

void set_read_only(Allocation& a, bool ro) {
    const size_t p = page_size();
    char* start = (char*)((uintptr_t)a.data / p * p);
    const size_t len = round_up((size_t)(a.data + a.bytes - start), p);
    mprotect(start, len, ro ? PROT_READ : PROT_READ | PROT_WRITE);
    std::lock_guard<std::mutex> g(mem_mu);
    auto it = live.find((uintptr_t)a.data);
    if (it != live.end()) it->second.read_only = ro;
}

bool canary_intact(const Allocation& a) {
    for (const char* p = a.map + page_size(); p < a.data; ++p) {
        if ((unsigned char)*p != CANARY) return false;
    }
    return true;
}

// C[i, j] of batch `p` for `emu_gemm`, in element type T: op(A)[i, l] * op(B)[l, j]
// summed over l, column-major, then alpha * acc + beta * C (C not read when beta is 0).
template <typename T>
void gemm_element(uint64_t a, uint64_t b, uint64_t c, int p, int i, int j, int k, int trans_a,
                  int trans_b, int lda, int ldb, int ldc, int64_t stride_a, int64_t stride_b,
                  int64_t stride_c, double alpha, double beta) {
    const T* A = (const T*)(uintptr_t)a + p * stride_a;
    const T* B = (const T*)(uintptr_t)b + p * stride_b;
    T* C = (T*)(uintptr_t)c + p * stride_c;
    T acc = 0;
    for (int l = 0; l < k; ++l) {
        const T x = trans_a ? A[l + (int64_t)i * lda] : A[i + (int64_t)l * lda];
        const T y = trans_b ? B[j + (int64_t)l * ldb] : B[l + (int64_t)j * ldb];
        acc += x * y;
    }
    T* out = C + i + (int64_t)j * ldc;
    *out = beta == 0 ? (T)alpha * acc : (T)alpha * acc + (T)beta * *out;
}

}  // namespace

// ---------------------------------------------------------------- the C API

extern "C" {

// A buffer of `bytes` (> 0) bytes; 0 when the device has no room (or bytes is 0).
uint64_t emu_alloc(uint64_t bytes) {
    if (bytes == 0) return 0;
    const size_t p = page_size();
    const size_t body = round_up(bytes, p);
    const size_t map_len = body + 2 * p;
    std::lock_guard<std::mutex> g(mem_mu);
    Allocation a;
    auto it = pooled.find(map_len);
    if (it != pooled.end()) {
        a = it->second;
        pooled.erase(it);
        pooled_bytes -= map_len;
        mprotect(a.map + p, body, PROT_READ | PROT_WRITE);
    } else {
        if (live_bytes + pooled_bytes + map_len > capacity) return 0;
        void* m = mmap(nullptr, map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m == MAP_FAILED) return 0;
        a.map = (char*)m;
        a.map_len = map_len;
        mprotect(a.map + p, body, PROT_READ | PROT_WRITE);
    }
    a.bytes = bytes;
    a.data = a.map + p + (body - bytes);
    a.read_only = false;
    memset(a.map + p, CANARY, body - bytes);
    memset(a.data, 0xff, bytes);
    live_bytes += map_len;
    live[(uintptr_t)a.data] = a;
    return (uint64_t)(uintptr_t)a.data;
}

// 0 on success, -1 when `addr` is not a live buffer, -2 when a kernel wrote
// before its start.
int emu_free(uint64_t addr) {
    std::lock_guard<std::mutex> g(mem_mu);
    auto it = live.find((uintptr_t)addr);
    if (it == live.end()) return -1;
    Allocation a = it->second;
    live.erase(it);
    live_bytes -= a.map_len;
    const int status = canary_intact(a) ? 0 : -2;
    if (pooled_bytes + a.map_len <= release_threshold) {
        mprotect(a.map, a.map_len, PROT_NONE);
        pooled.emplace(a.map_len, a);
        pooled_bytes += a.map_len;
    } else {
        munmap(a.map, a.map_len);
    }
    return status;
}

// Releases pooled memory until at most `keep` bytes stay pooled.
void emu_trim(uint64_t keep) {
    std::lock_guard<std::mutex> g(mem_mu);
    while (pooled_bytes > keep && !pooled.empty()) {
        auto it = pooled.begin();
        munmap(it->second.map, it->second.map_len);
        pooled_bytes -= it->second.map_len;
        pooled.erase(it);
    }
}

void emu_set_release_threshold(uint64_t bytes) {
    std::lock_guard<std::mutex> g(mem_mu);
    release_threshold = bytes;
}

void emu_set_capacity(uint64_t bytes) {
    std::lock_guard<std::mutex> g(mem_mu);
    capacity = bytes;
}

// Live and pooled bytes (mappings, guard pages included) and the capacity.
void emu_mem_info(uint64_t* live_out, uint64_t* pooled_out, uint64_t* capacity_out) {
    std::lock_guard<std::mutex> g(mem_mu);
    *live_out = live_bytes;
    *pooled_out = pooled_bytes;
    *capacity_out = capacity;
}

// Copies between the host and a buffer (`addr` may point inside one); 0 on
// success, -1 when the range is not inside one live buffer.
static int check_range(uint64_t addr, uint64_t bytes) {
    std::lock_guard<std::mutex> g(mem_mu);
    auto it = live.upper_bound((uintptr_t)addr);
    if (it == live.begin()) return -1;
    --it;
    const Allocation& a = it->second;
    const uintptr_t d = (uintptr_t)a.data;
    if (addr < d || addr + bytes > d + a.bytes) return -1;
    return 0;
}

int emu_memcpy_htod(uint64_t dst, const void* src, uint64_t bytes) {
    if (check_range(dst, bytes)) return -1;
    memcpy((void*)(uintptr_t)dst, src, bytes);
    return 0;
}

int emu_memcpy_dtoh(void* dst, uint64_t src, uint64_t bytes) {
    if (check_range(src, bytes)) return -1;
    memcpy(dst, (const void*)(uintptr_t)src, bytes);
    return 0;
}

int emu_memset_d8(uint64_t dst, unsigned char v, uint64_t bytes) {
    if (check_range(dst, bytes)) return -1;
    memset((void*)(uintptr_t)dst, v, bytes);
    return 0;
}

uint32_t emu_schedule_count() { return N_SCHEDULES; }

// Launches `fn` (the kernel `name`) over grid x block threads, under each
// schedule whose bit is set in `schedules`. 0 on success; else -1 and `err`.
int emu_launch(const char* name, void* fn, const EmuArg* args, uint32_t nargs,
               const uint32_t* grid_in, const uint32_t* block_in, uint32_t shared_bytes,
               uint32_t schedules, uint64_t seed, char* err, size_t errlen) {
    const dim3 grid = {grid_in[0], grid_in[1], grid_in[2]};
    const dim3 block = {block_in[0], block_in[1], block_in[2]};
    auto fail = [&](const std::string& m) {
        set_err(err, errlen, format("emulated CUDA kernel `%s`: ", name) + m);
        return -1;
    };
    // cuLaunchKernel's limits (compute capability 9.0).
    const uint64_t threads = (uint64_t)block.x * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
        grid.z > 65535) {
        return fail(format("invalid grid (%u, %u, %u) (CUDA_ERROR_INVALID_VALUE)", grid.x,
                           grid.y, grid.z));
    }
    if (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64) {
        return fail(format("invalid block (%u, %u, %u) (CUDA_ERROR_INVALID_VALUE)", block.x,
                           block.y, block.z));
    }
    // Past 48 KiB a kernel must have opted in (checked by the Rust side, which
    // knows the kernel's attribute); the opt-in maximum of compute capability 9.0.
    if (shared_bytes > 227 * 1024) {
        return fail(format("%u bytes of dynamic shared memory (at most 227 KiB per block) "
                           "(CUDA_ERROR_INVALID_VALUE)",
                           shared_bytes));
    }
    Call call{fn, args, nargs, "", S_UNKNOWN};
    std::vector<Buffer> bufs;
    for (uint32_t i = 0; i < nargs; ++i) {
        const EmuArg& a = args[i];
        switch (a.kind) {
        case U64: call.sig += 'u'; break;
        case F64: call.sig += 'd'; break;
        case IX1: call.sig += '1'; break;
        case IX2: call.sig += '2'; break;
        case IXR: call.sig += 'R'; break;
        case RAW: call.sig += 'W'; break;
        case IN:
        case OUT: {
            call.sig += 'p';
            const uint64_t addr = arg<u64>(a);
            std::lock_guard<std::mutex> g(mem_mu);
            auto it = live.find((uintptr_t)addr);
            if (it == live.end()) {
                return fail(format("argument %u is not a live device buffer", i));
            }
            bufs.push_back({it->second, a.elem & ~EXACT_ELEM, a.kind == OUT,
                            (a.elem & EXACT_ELEM) != 0});
            break;
        }
        default: return fail(format("argument %u has an unknown kind", i));
        }
    }
    call.kind = signature(call.sig);
    if (call.kind == S_UNKNOWN) {
        return fail("no launcher for the parameter list " + call.sig);
    }
    // Dynamic shared memory: its bytes at the end of their pages (16-byte
    // aligned), an inaccessible page after them, so a kernel reading or writing
    // past them faults; refilled with NaN bytes for each block.
    const size_t dyn_page = page_size();
    const size_t dyn_len = round_up(shared_bytes, 16);
    const size_t dyn_body = round_up(std::max<size_t>(dyn_len, 1), dyn_page);
    char* dyn_map = nullptr;
    if (shared_bytes) {
        void* m = mmap(nullptr, dyn_body + dyn_page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return fail("no memory for the dynamic shared memory");
        dyn_map = (char*)m;
        mprotect(dyn_map + dyn_body, dyn_page, PROT_NONE);
    }
    unsigned char* const dyn_data =
        dyn_map ? (unsigned char*)(dyn_map + dyn_body - dyn_len) : nullptr;
    unsigned char* const dyn_before = t_dyn_shared;
    t_dyn_shared = dyn_data;
    install_handler();
    // Inputs are read-only while the kernel runs (unless also an output).
    std::vector<Allocation> protect;
    for (auto& b : bufs) {
        bool also_out = false;
        for (auto& c : bufs) also_out |= c.out && c.a.data == b.a.data;
        if (!b.out && !also_out) {
            bool seen = false;
            for (auto& p : protect) seen |= p.data == b.a.data;
            if (!seen) protect.push_back(b.a);
        }
    }
    std::vector<std::vector<unsigned char>> before, first;
    for (auto& b : bufs) {
        if (b.out) before.emplace_back(b.a.data, b.a.data + b.a.bytes);
    }
    for (auto& p : protect) set_read_only(p, true);
    std::string error;
    const char* first_name = nullptr;
    for (unsigned s = 0; s < N_SCHEDULES && error.empty(); ++s) {
        if (!(schedules & (1u << s))) continue;
        const Schedule& sc = SCHEDULES[s];
        // Every schedule starts from the memory the launch found.
        size_t k = 0;
        for (auto& b : bufs) {
            if (b.out) memcpy(b.a.data, before[k++].data(), b.a.bytes);
        }
        dim3 g = grid;
        if (sc.max_grid_x) g.x = std::min(g.x, sc.max_grid_x);
        std::vector<uint3> order;
        for (unsigned z = 0; z < g.z; ++z)
            for (unsigned y = 0; y < g.y; ++y)
                for (unsigned x = 0; x < g.x; ++x) order.push_back({x, y, z});
        std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ull * (s + 1)));
        if (sc.order == BLOCKS_REVERSE) std::reverse(order.begin(), order.end());
        if (sc.order == BLOCKS_SHUFFLED) std::shuffle(order.begin(), order.end(), rng);
        t_invoke = invoke;
        t_invoke_arg = &call;
        sigjmp_buf jb;
        volatile size_t bi = 0;
        if (sigsetjmp(jb, 1)) {
            const Fiber* f = t_cur;
            t_cur = nullptr;
            emu_lane = nullptr;
            error = fault_message();
            if (f) error += " at " + where(*f);
            error += format(" (schedule '%s')", sc.name);
            break;
        }
        t_fault_jmp = &jb;
        for (; bi < order.size(); bi = bi + 1) {
            if (dyn_data) memset(dyn_data, 0xff, dyn_len);
            std::string e = run_block(order[bi], g, block, sc.pick, rng);
            if (!e.empty()) {
                error = e + format(" (schedule '%s')", sc.name);
                break;
            }
        }
        t_fault_jmp = nullptr;
        if (!error.empty()) break;
        for (auto& b : bufs) {
            if (b.out && !canary_intact(b.a)) {
                error = format("wrote before the start of an output buffer of %zu bytes "
                               "(schedule '%s')",
                               b.a.bytes, sc.name);
            }
        }
        if (!error.empty()) break;
        if (!first_name) {
            first_name = sc.name;
            for (auto& b : bufs) {
                if (b.out) first.emplace_back(b.a.data, b.a.data + b.a.bytes);
            }
            continue;
        }
        k = 0;
        unsigned out_no = 0;
        for (auto& b : bufs) {
            if (!b.out) continue;
            const unsigned char* want = first[k++].data();
            const size_t n = b.a.bytes / b.elem;
            std::string m;
            for (size_t i = 0; i < n; ++i) {
                if (!close_enough(want, (const unsigned char*)b.a.data, b.elem, b.exact, i, &m)) {
                    error = format("the result depends on the schedule (a race between blocks "
                                   "or threads, or a missing barrier): output %u under '%s': %s "
                                   "'%s'",
                                   out_no, sc.name, m.c_str(), first_name);
                    break;
                }
            }
            ++out_no;
            if (!error.empty()) break;
        }
    }
    for (auto& p : protect) set_read_only(p, false);
    t_dyn_shared = dyn_before;
    if (dyn_map) munmap(dyn_map, dyn_body + dyn_page);
    if (!error.empty()) return fail(error);
    return 0;
}

// cuBLAS's gemm and strided batched gemm (column-major), with cuBLAS's argument
// checks. `elem` is 4 (Sgemm) or 8 (Dgemm). 0 on success, 7
// (CUBLAS_STATUS_INVALID_VALUE) for bad arguments, -1 for a fault; `err` says why.
int emu_gemm(uint32_t elem, int trans_a, int trans_b, int m, int n, int k, double alpha,
             uint64_t a, int lda, int64_t stride_a, uint64_t b, int ldb, int64_t stride_b,
             double beta, uint64_t c, int ldc, int64_t stride_c, int batch, char* err,
             size_t errlen) {
    auto invalid = [&](const std::string& m) {
        set_err(err, errlen, "CUBLAS_STATUS_INVALID_VALUE: " + m);
        return 7;
    };
    if (m < 0 || n < 0 || k < 0 || batch < 0) {
        return invalid(format("m = %d, n = %d, k = %d, batch = %d", m, n, k, batch));
    }
    const int rows_a = trans_a ? k : m, rows_b = trans_b ? n : k;
    if (lda < std::max(1, rows_a)) {
        return invalid(format("lda = %d < max(1, %s) = %d", lda, trans_a ? "k" : "m", rows_a));
    }
    if (ldb < std::max(1, rows_b)) {
        return invalid(format("ldb = %d < max(1, %s) = %d", ldb, trans_b ? "n" : "k", rows_b));
    }
    if (ldc < std::max(1, m)) return invalid(format("ldc = %d < max(1, m) = %d", ldc, m));
    if (batch > 1 && (uint64_t)std::llabs(stride_c) < (uint64_t)ldc * (n ? n - 1 : 0) + m) {
        // cuBLAS does not check this; on a GPU the batches race for C.
        return invalid(format("the %d results overlap (stride_c = %lld for %d x %d, ldc %d)",
                              batch, (long long)stride_c, m, n, ldc));
    }
    if (m == 0 || n == 0 || batch == 0) return 0;
    install_handler();
    sigjmp_buf jb;
    if (sigsetjmp(jb, 1)) {
        set_err(err, errlen, "cuBLAS gemm: " + fault_message());
        return -1;
    }
    t_fault_jmp = &jb;
    for (int p = 0; p < batch; ++p) {
        for (int j = 0; j < n; ++j) {
            for (int i = 0; i < m; ++i) {
                if (elem == 4) {
                    gemm_element<float>(a, b, c, p, i, j, k, trans_a, trans_b, lda, ldb, ldc,
                                        stride_a, stride_b, stride_c, alpha, beta);
                } else {
                    gemm_element<double>(a, b, c, p, i, j, k, trans_a, trans_b, lda, ldb, ldc,
                                         stride_a, stride_b, stride_c, alpha, beta);
                }
            }
        }
    }
    t_fault_jmp = nullptr;
    return 0;
}

}  // extern "C"
