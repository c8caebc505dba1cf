#!/usr/bin/env python3
"""Prints, for every crate of the workspace, which of its modules each module uses, and
the cycles among them; exits non-zero when any crate has a cycle (CI runs it).

A module is a source file: `m.rs`, or a folder's `m/mod.rs` (its files `m/x.rs` are
modules of their own, `m::x`). The crate root (`lib.rs`) is left out: it declares and
re-exports everything. Module `a` uses module `b` when `a`'s code names a path that
goes through `b`: `crate::b::..`, `super::..`, `self::..`, a child module's name, or an
item that the crate root re-exports (`pub use`, globs included) from `b`. A path through
a module that re-exports an item uses that module, as the path names it. Not edges:
comments (doc comments and their intra-doc links included), string literals, the tokens
a proc macro emits (`quote! { .. }`), test-only code (`#[cfg(test)]` items: a
`mod tests { use super::*; }` block, a `#[cfg(test)] mod x;` file), `mod x;`
declarations, a module's `pub use` (it hands names on), and a module's use of its
ancestors' items (see `Crate.graph`).

Run from anywhere: `python3 scripts/module_deps.py` (`-q`: the cycles only).
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CRATES = [
    ("autograd-kernels", "kernels/src"),
    ("autograd-core", "autograd-core/src"),
    ("autograd-macros", "autograd-macros/src"),
    ("autograd-ops", "ops/src"),
    ("autograd", "src"),
]
# Macros whose tokens are code for another crate (a proc macro's output).
EMITTED = {"quote", "quote_spanned", "parse_quote", "parse_quote_spanned"}
ITEM = re.compile(
    r"\b(?:fn|struct|enum|trait|const|static|type|union|mod|macro_rules!)\s+([A-Za-z_]\w*)"
)


def strip(text):
    """The code without comments, string and char literals (each replaced by a space)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        elif re.match(r'(?:b|c)?r#*"', text[i : i + 80]) and (i == 0 or not re.match(r"\w", text[i - 1])):
            m = re.match(r'(?:b|c)?r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append(' "" ')
        elif c == '"' or (c in "bc" and text.startswith('"', i + 1) and (i == 0 or not re.match(r"\w", text[i - 1]))):
            i = text.find('"', i) + 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append(' "" ')
        elif c == "'":
            m = re.match(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", text[i:])
            if m:
                i += m.end()
                out.append(" ' ' ")
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(src, i):
    """The index just past the bracket that closes the one at `i`."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    opening, closing, depth = src[i], pairs[src[i]], 0
    for j in range(i, len(src)):
        if src[j] == opening:
            depth += 1
        elif src[j] == closing:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(src)


def drop_test_and_emitted(src):
    """`src` without `#[cfg(test)]` items and the bodies of `quote!`-like macros, and
    the names of the files that `#[cfg(test)] mod x;` declares."""
    test_files = set()
    while True:
        m = re.search(r"#\[cfg\(test\)\]", src)
        if not m:
            break
        # The item after the attribute (and any further attributes).
        j = m.end()
        while True:
            a = re.match(r"\s*#\[", src[j:])
            if not a:
                break
            j = matching(src, j + a.end() - 1)
        decl = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", src[j:])
        if decl:
            test_files.add(decl.group(1))
            end = j + decl.end()
        else:
            k = j
            while k < len(src) and src[k] not in "{;":
                k += 1
            end = matching(src, k) if k < len(src) and src[k] == "{" else k + 1
        src = src[: m.start()] + " " + src[end:]
    for name in EMITTED:
        while True:
            m = re.search(r"\b%s!\s*([{(\[])" % name, src)
            if not m:
                break
            src = src[: m.start()] + " " + src[matching(src, m.end() - 1) :]
    return src, test_files


def use_trees(tree):
    """Expands a use tree (`a::{b, c::d as e, f::*}`) into (path, name) pairs; the name
    is the one it brings in scope (`*` for a glob, `self` pairs name their module)."""
    tree = re.sub(r"\s+", "", tree)

    def split(s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        if cur:
            parts.append(cur)
        return parts

    def walk(prefix, s):
        brace = s.find("{")
        if brace >= 0 and (s.find("as") < 0 or brace < s.find("as")):
            head = s[:brace].rstrip(":")
            base = prefix + ([seg for seg in head.split("::") if seg] if head else [])
            for part in split(s[brace + 1 : s.rfind("}")]):
                yield from walk(base, part)
            return
        alias = None
        if "as" in s and re.search(r"[\w*]as[A-Za-z_]", s):
            s, alias = re.split(r"(?<=[\w*])as(?=[A-Za-z_])", s, maxsplit=1)
        segs = prefix + [seg for seg in s.split("::") if seg]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        if not segs:
            return
        yield segs, alias or segs[-1]

    yield from walk([], tree)


class Crate:
    def __init__(self, src_dir):
        self.dir = src_dir
        self.modules = {}  # module path (tuple) -> file
        self.code = {}
        self.skip = set()
        self._find((), os.path.join(src_dir, "lib.rs"))

    def _find(self, path, file):
        """Follows `mod x;` declarations from `file` (module `path`)."""
        self.modules[path] = file
        code, test_files = drop_test_and_emitted(strip(open(file).read()))
        self.code[path] = code
        here = os.path.dirname(file)
        if path and os.path.basename(file) != "mod.rs":
            here = os.path.join(here, path[-1])
        for name in re.findall(r"(?:^|[;}\s])(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code):
            if name in test_files:
                continue
            for candidate in (os.path.join(here, name + ".rs"), os.path.join(here, name, "mod.rs")):
                if os.path.exists(candidate):
                    self._find(path + (name,), candidate)
                    break

    def scopes(self, path):
        """(inline module path, code) pieces of module `path`'s file, inline `mod x { .. }`
        blocks apart."""
        code, out = self.code[path], []

        def go(prefix, text):
            rest, pos = "", 0
            for m in re.finditer(r"\bmod\s+(\w+)\s*\{", text):
                if m.start() < pos:
                    continue
                rest += text[pos : m.start()]
                end = matching(text, m.end() - 1)
                go(prefix + (m.group(1),), text[m.end() : end - 1])
                pos = end
            out.append((prefix, rest + text[pos:]))

        go(path, code)
        return out

    def imports(self, scope, code):
        """(absolute path, name) for each `use` in `code`, the module being `scope`."""
        found = []
        for m in re.finditer(r"\buse\s+([^;]*);", code):
            vis = code[max(0, m.start() - 20) : m.start()]
            public = re.search(r"\bpub(?:\([^)]*\))?\s*$", vis) is not None
            for segs, name in use_trees(m.group(1)):
                absolute = self.absolute(scope, segs)
                if absolute is not None:
                    found.append((absolute, name, public))
        return found

    def absolute(self, scope, segs, aliases=None):
        """The crate-relative path that `segs`, written in module `scope`, names; None
        for another crate's."""
        segs = list(segs)
        if segs[0] == "crate":
            return tuple(segs[1:])
        if segs[0] in ("self", "super"):
            base = list(scope)
            while segs and segs[0] in ("self", "super"):
                if segs.pop(0) == "super":
                    base = base[:-1]
            return tuple(base + segs)
        if segs[0] == "":
            return None
        if self.is_module(tuple(scope) + (segs[0],)):
            return tuple(scope) + tuple(segs)
        if aliases and segs[0] in aliases:
            return aliases[segs[0]] + tuple(segs[1:])
        return None

    def is_module(self, path):
        if not hasattr(self, "_all"):
            self._all = {scope for p in self.modules for scope, _ in self.scopes_cached(p)}
        return path in self._all

    def scopes_cached(self, path):
        if not hasattr(self, "_scopes"):
            self._scopes = {}
        if path not in self._scopes:
            self._scopes[path] = self.scopes(path)
        return self._scopes[path]

    def index(self):
        """Re-exports and defined items of each module (inline ones included)."""
        self.reexports, self.globs, self.defines = {}, {}, {}
        for path in self.modules:
            for scope, code in self.scopes_cached(path):
                self.defines.setdefault(scope, set()).update(ITEM.findall(code))
                for target, name, public in self.imports(scope, code):
                    if not public:
                        continue
                    if name == "*":
                        self.globs.setdefault(scope, []).append(target)
                    else:
                        self.reexports.setdefault(scope, {})[name] = target
        for scope in list(self.defines):
            if scope:
                self.defines.setdefault(scope[:-1], set()).add(scope[-1])

    def resolve(self, path, seen=None):
        """The file module that defines what `path` names."""
        seen = seen or set()
        if path in seen:
            return None
        seen.add(path)
        k = len(path)
        while k and path[:k] not in self.modules and not self.is_module(path[:k]):
            k -= 1
        module, rest = path[:k], path[k:]
        # The crate root is no module of the graph: a name it re-exports stands for
        # the module it comes from. Another module's re-export is that module's own
        # face: a path through it uses it.
        if rest and not module:
            name = rest[0]
            target = self.reexports.get(module, {}).get(name)
            if target is not None and name not in self.defines.get(module, ()):
                found = self.resolve(target + rest[1:], seen)
                if found is not None:
                    return found
            elif name not in self.defines.get(module, ()):
                for glob in self.globs.get(module, []):
                    if self.exports(glob, name, set()):
                        found = self.resolve(glob + rest, seen)
                        if found is not None:
                            return found
        while module not in self.modules:
            module = module[:-1]
        return module

    def exports(self, module, name, seen):
        if module in seen:
            return False
        seen.add(module)
        return (
            name in self.defines.get(module, ())
            or name in self.reexports.get(module, {})
            or any(self.exports(g, name, seen) for g in self.globs.get(module, []))
        )

    def graph(self):
        """{module: {module it uses: names it takes from it}}. A module's use of an
        ancestor's items (`super::X` in `cpu/pool.rs`, X in `cpu/mod.rs`) is no edge:
        a child module is a part of its parent (it sees the parent's private items), so
        a parent that calls into its children would otherwise always read as a cycle."""
        self.index()
        graph = {}
        for path in self.modules:
            if not path:
                continue
            used = {}

            def use(target, name):
                module = self.resolve(target)
                if module is not None and module != path[: len(module)]:
                    used.setdefault(module, set()).add(name)

            for scope, code in self.scopes_cached(path):
                aliases = {}
                for target, name, public in self.imports(scope, code):
                    if not public:  # a `pub use` hands a name on: not a use
                        use(target, name)
                    if name != "*" and self.is_module(target):
                        aliases[name] = target
                code = re.sub(r"\buse\s+[^;]*;", " ", code)
                for m in re.finditer(r"(?<![\w:])((?:[A-Za-z_]\w*\s*::\s*)+[A-Za-z_]\w*)", code):
                    segs = re.split(r"\s*::\s*", m.group(1))
                    absolute = self.absolute(scope, segs, aliases)
                    if absolute is not None:
                        use(absolute, "::".join(segs))
            graph[path] = used
        return graph


def cycles(graph):
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def name(path):
    return "/".join(path)


def main():
    quiet = "-q" in sys.argv[1:]
    failed = False
    for crate, src in CRATES:
        graph = Crate(os.path.join(ROOT, src)).graph()
        found = cycles(graph)
        failed |= bool(found)
        print(f"== {crate} ({src})")
        if not quiet:
            for m in sorted(graph):
                print(f"  {name(m):22} -> {' '.join(name(u) for u in sorted(graph[m]))}")
        for group in found:
            print("  cycle: " + " <-> ".join(name(m) for m in group))
            members = set(group)
            for m in group:
                for u in sorted(graph[m]):
                    if u in members:
                        print(f"    {name(m)} -> {name(u)}: {', '.join(sorted(graph[m][u]))}")
        if not found:
            print("  cycles: none")
    if failed:
        print("module cycles (above): a module uses, through others, a module that uses it")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
