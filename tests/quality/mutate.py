#!/usr/bin/python3
"""Mutants of nfbox's C code for tests/quality/mutants.sh: one small change
at a time, of the kinds a real bug has.

  list FILE...         every mutation site, numbered: N FILE:LINE:COL
                       OPERATOR 'ORIGINAL' -> 'MUTANT'
  apply N FILE...      make mutant N of the list of FILE... in place;
                       prints its description, a tab, its operator, a
                       tab and the text of its line

Operators: a flipped comparison (< <=, > >=, == !=), a swapped logical
operator (&& ||), an off-by-one (+ 1 / - 1 on a literal), a deleted
condition (if (X) -> if (0) and if (1)), a negated return of a boolean, and
swapped fields that come in pairs (lo/hi, src/dst, sport/dport, in/out,
neg). Comments, strings, #include and #define lines are left alone.
"""
import re
import sys

PAIRS = [("lo", "hi"), ("src", "dst"), ("sport", "dport"), ("iif", "oif"), ("in", "out")]
COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}


def code_spans(line):
    """The parts of a line that are code: not in a string, a char literal
    or a comment (block comments are taken line by line: good enough for
    this code base, which opens and closes them at line ends)."""
    out, i, n, start = [], 0, len(line), 0
    while i < n:
        c = line[i]
        if line.startswith("//", i) or line.startswith("/*", i):
            out.append((start, i))
            return out, True
        if c in "\"'":
            out.append((start, i))
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == "\\" else 1
            i = start = j + 1
            continue
        i += 1
    out.append((start, n))
    return out, False


def sites(path):
    in_comment = False
    for no, line in enumerate(open(path), 1):
        s = line.rstrip("\n")
        if in_comment:
            if "*/" in s:
                in_comment = False
            continue
        st = s.strip()
        if st.startswith(("#", "*", "/*", "//")) or not st:
            in_comment = st.startswith("/*") and "*/" not in st
            continue
        spans, _ = code_spans(s)
        for a, b in spans:
            seg = s[a:b]
            for m in re.finditer(r"(?<![<>=!&|+\-*/%^])(<=|>=|==|!=|<|>)(?![<>=])", seg):
                op = m.group(1)
                # not the -> of a member, not a template-like shift
                if op == ">" and m.start() > 0 and seg[m.start() - 1] == "-":
                    continue
                yield no, a + m.start() + 1, "compare", op, COMPARE[op]
            for m in re.finditer(r"&&|\|\|", seg):
                yield no, a + m.start() + 1, "logic", m.group(0), "||" if m.group(0) == "&&" else "&&"
            for m in re.finditer(r"([+-]) 1\b", seg):
                yield no, a + m.start() + 1, "off-by-one", m.group(0), m.group(1) + " 2" if m.group(1) == "+" else "+ 0"
            for m in re.finditer(r"\bif \(", seg):
                depth, j = 1, m.end()
                while j < len(seg) and depth:
                    depth += {"(": 1, ")": -1}.get(seg[j], 0)
                    j += 1
                if depth == 0:
                    cond = seg[m.end():j - 1]
                    yield no, a + m.end() + 1, "if-false", cond, "0"
                    yield no, a + m.end() + 1, "if-true", cond, "1"
            for m in re.finditer(r"\breturn (true|false);", seg):
                yield no, a + m.start() + 8, "return", m.group(1), "false" if m.group(1) == "true" else "true"
            for x, y in PAIRS:
                for m in re.finditer(r"(?<=[.>])(%s|%s)\b" % (x, y), seg):
                    yield no, a + m.start() + 1, "swap-field", m.group(1), y if m.group(1) == x else x
            for m in re.finditer(r"(?<=[.>])neg\b", seg):
                yield no, a + m.start() + 1, "negate-field", "neg", "neg ^ 1"


def all_sites(paths):
    return [(p,) + x for p in paths for x in sites(p)]


def describe(site):
    p, no, col, op, orig, mut = site
    return "%s:%d:%d %s '%s' -> '%s'" % (p, no, col, op, " ".join(orig.split()), mut)


def cmd_list(*paths):
    for i, site in enumerate(all_sites(paths)):
        print("%d %s" % (i, describe(site)))


def cmd_apply(n, *paths):
    """Mutant number n of the sites of paths, applied in place; prints it
    and the text of its line (for the list of equivalent mutants)."""
    p, no, col, op, orig, mut = all_sites(paths)[int(n)]
    lines = open(p).readlines()
    s = lines[no - 1]
    c = col - 1
    if s[c:c + len(orig)] != orig:
        raise SystemExit("mutate: %s:%d:%d does not read '%s'" % (p, no, col, orig))
    lines[no - 1] = s[:c] + mut + s[c + len(orig):]
    open(p, "w").writelines(lines)
    print("%s\t%s\t%s" % (describe((p, no, col, op, orig, mut)), op, " ".join(s.split())))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"list": cmd_list, "apply": cmd_apply}[cmd](*args)


if __name__ == "__main__":
    main()
