"""A user kernel's declaration: its parameter lists ('[raw] TYPE NAME, ...'), its name, and
what its C source does with an output (reads_before_writing)."""

import re

from .._types import NUMPY_NAMES

# Type names a parameter may give (numpy's, plus bfloat16), as tally type names.
TYPE_NAMES = {name: t for t, name in NUMPY_NAMES.items()}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# C++ words that cannot name a parameter or a placeholder ('float', 'int', ...: use numpy's names).
_CXX_WORDS = frozenset(
    "auto bool break case char class const continue default delete do double else enum extern false float for "
    "goto if inline int long namespace new operator private protected public register return short signed sizeof "
    "static struct switch template this true typedef typename union unsigned using virtual void volatile while "
    "half".split())


class Param:
    """One parameter: `[raw] TYPE NAME`. type is a tally type name, or None for a placeholder."""

    __slots__ = ("name", "type", "placeholder", "raw", "output")

    def __init__(self, text, output, kernel):
        words = text.split()
        raw = len(words) == 3 and words[0] == "raw"
        if len(words) != 2 + raw:
            raise ValueError(f"tally: {kernel}: cannot parse the parameter {text!r}; expected '[raw] TYPE NAME'")
        type_word, name = words[raw:]
        if not _IDENTIFIER.match(name) or name in _CXX_WORDS:
            raise ValueError(f"tally: {kernel}: {name!r} is not a parameter name")
        if name in ("i", "n") or name.startswith("_"):
            raise ValueError(f"tally: {kernel}: the parameter name {name!r} is reserved (i, n and names "
                             "starting with _ are the kernel's own)")
        self.name, self.raw, self.output = name, raw, output
        self.type = TYPE_NAMES.get(type_word)
        self.placeholder = None
        if self.type is None:
            if type_word.startswith("complex"):
                raise TypeError(f"tally: {kernel}: complex types are not supported ({text!r})")
            if not _IDENTIFIER.match(type_word) or type_word in _CXX_WORDS or type_word.startswith("_"):
                raise ValueError(f"tally: {kernel}: {type_word!r} in {text!r} is neither a type name "
                                 "(bool, int8 ... uint64, float16, bfloat16, float32, float64) nor a "
                                 "placeholder name such as T")
            self.placeholder = type_word


def parse_params(text, output, kernel):
    if not isinstance(text, str):
        raise TypeError(f"tally: {kernel}: parameters must be a str such as 'T x, T y', got {text!r}")
    return [Param(p.strip(), output, kernel) for p in text.split(",")] if text.strip() else []


def check_names(kernel, params):
    names = [p.name for p in params]
    placeholders = {p.placeholder for p in params if p.placeholder}
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"tally: {kernel}: the parameter name {name!r} appears twice")
        if name in placeholders:
            raise ValueError(f"tally: {kernel}: {name!r} names both a parameter and a type placeholder")


def check_name(name):
    if not isinstance(name, str) or not _IDENTIFIER.match(name) or name in _CXX_WORDS:
        raise ValueError(f"tally: a kernel's name must be a C identifier, got {name!r}")
    return name


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def reads_before_writing(code, name):
    """Whether `code` may read the output `name` before writing all of it, so that its old value
    must be loaded: false only where its first mention starts a top-level statement `name = ...`
    (not ==) with no return or goto before it."""
    code = _COMMENT.sub(" ", code)
    first = re.search(rf"\b{re.escape(name)}\b", code)
    if first is None:
        return False
    before, after = code[:first.start()], code[first.end():]
    if re.search(r"\b(return|goto)\b", before) or not re.match(r"\s*=(?!=)", after):
        return True
    depth, start = 0, 0
    for k, c in enumerate(before):
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if depth == 0 and c in ";}":
            start = k + 1
    return depth != 0 or before[start:].strip() != ""
