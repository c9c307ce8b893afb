#!/usr/bin/python3
"""A man page against the --help of the program it documents, both ways.
Prints one line per case (ok NAME / FAIL NAME: why); exits 1 on a failure.

  nfbox PAGE NFBOX
      nfbox(8) against `nfbox --help` and `nfbox CMD --help`: the page has a
      section (.SS "nfbox CMD ...") for every command and for no other; the
      section's title names exactly the command's long options; every
      option of its --help (long, and short beside it on one line) is in
      the section; every option the section defines (a .TP item) is in its
      --help, with the same short form.
  script PAGE PROGRAM
      a script's page (nfbox-fleet-rbac(8)) against its --help: the options
      its usage lines name are the options the page defines (.TP items),
      and its operations (the word after the options) the page's .TP words.
"""
import re
import subprocess
import sys

FAILED = 0


def ok(name):
    print("ok %s" % name)


def fail(name, why):
    global FAILED
    FAILED += 1
    print("FAIL %s: %s" % (name, why))


def check(name, cond, why):
    if cond:
        ok(name)
    else:
        fail(name, why)


def roff_text(s):
    """Roff source as text: \\- as -, font changes and quotes gone."""
    s = s.replace("\\-", "-").replace("\\(em", "-")
    s = re.sub(r"\\f[BIRP]", "", s)
    s = re.sub(r"\\[&%]", "", s)
    return s


def tokens(s, pattern=r"--[a-z][a-z0-9-]*"):
    return set(re.findall(r"(?<![\w-])" + pattern + r"(?![\w-])", s))


def help_of(prog, *args):
    return subprocess.run([prog, *args, "--help"], capture_output=True, text=True, check=True).stdout


def help_options(text):
    """{long: short or None} from the options: part of a --help."""
    opts = {}
    for m in re.finditer(r"^  (?:-([A-Za-z]), )?\s*--([a-z][a-z0-9-]*)", text, re.M):
        opts["--" + m.group(2)] = "-" + m.group(1) if m.group(1) else None
    return opts


def sections(page):
    """{command: (title, body)} for each .SS "nfbox CMD ..." of the page."""
    out = {}
    parts = re.split(r"^(\.S[SH] .*)$", page, flags=re.M)
    for i in range(1, len(parts) - 1, 2):
        title = roff_text(parts[i])
        m = re.match(r'\.SS "?nfbox ([a-z][a-z-]*)', title)
        if m:
            out[m.group(1)] = (title, roff_text(parts[i + 1]))
    return out


def defined(body):
    """The options a section defines: the first line of each .TP item."""
    lines = body.split("\n")
    return [lines[i + 1] for i in range(len(lines) - 1) if lines[i].startswith(".TP")]


def check_command(cmd, opts, title, body):
    got = tokens(title)
    check("man-title-%s" % cmd, got == set(opts),
          "the section's title names %s, nfbox %s --help %s" % (sorted(got), cmd, sorted(opts)))
    missing = []
    for lo, so in sorted(opts.items()):
        if not tokens(body, re.escape(lo)):
            missing.append(lo)
        elif so and not any(tokens(line, re.escape(lo)) and tokens(line, re.escape(so)) for line in body.split("\n")):
            missing.append("%s beside %s" % (so, lo))
    check("man-describes-%s" % cmd, not missing, "nfbox(8) lacks: %s" % ", ".join(missing))
    extra = []
    for line in defined(body):
        for lo in tokens(line):
            if lo not in opts:
                extra.append(lo)
            elif not line.startswith(".IP"):
                for so in tokens(line, r"-[A-Za-z]"):
                    if so != opts[lo]:
                        extra.append("%s (as the short form of %s)" % (so, lo))
    check("man-no-extra-%s" % cmd, not extra, "nfbox(8) defines what nfbox %s --help lacks: %s" % (cmd, ", ".join(extra)))


def nfbox(page_path, prog):
    page = open(page_path).read()
    top = help_of(prog)
    cmds = re.findall(r"^  nfbox ([a-z][a-z-]*)", top, re.M)
    secs = sections(page)
    check("man-commands", set(cmds) == set(secs),
          "nfbox --help has %s, nfbox(8) sections %s" % (sorted(cmds), sorted(secs)))
    for cmd in cmds:
        if cmd in secs:
            check_command(cmd, help_options(help_of(prog, cmd)), *secs[cmd])
    for flag in ("--help", "--version"):
        check("man-%s" % flag[2:], re.search(r'^\.SS "nfbox \\-\\-%s"' % flag[2:], page, re.M) and flag in top,
              "nfbox(8) or nfbox --help lacks nfbox %s" % flag)


def script(page_path, prog):
    page = open(page_path).read()
    text = subprocess.run([prog, "--help"], capture_output=True, text=True, check=True).stdout
    usage = [line for line in text.split("\n") if re.match(r"\s*%s " % re.escape(prog.rsplit("/", 1)[-1]), line)]
    opts = set().union(*(tokens(u) for u in usage)) if usage else set()
    ops = {m.group(1) for u in usage for m in [re.search(r"(?:^|[\]\s])([a-z]+)(?: [A-Z_ ]+)?\s*$", u)] if m}
    items = defined(roff_text(page))
    man_opts = set().union(*(tokens(i) for i in items)) if items else set()
    man_ops = {m.group(1) for i in items for m in [re.match(r"\.B ([a-z]+)$", i)] if m}
    name = prog.rsplit("/", 1)[-1]
    check("man-%s-options" % name, usage and opts == man_opts, "--help names %s, the page defines %s" % (sorted(opts), sorted(man_opts)))
    check("man-%s-operations" % name, ops and ops == man_ops, "--help has %s, the page %s" % (sorted(ops), sorted(man_ops)))


def main():
    {"nfbox": nfbox, "script": script}[sys.argv[1]](*sys.argv[2:])
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
