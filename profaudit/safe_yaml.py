"""YAML from users (claim files, uploads) with a budget on what aliases can expand to.

`yaml.safe_load` builds an alias as a shared reference, so a 464-byte "billion laughs" document
(nine levels of lists of ten aliases each) loads in microseconds -- and then every walk over it
(validation, hashing, printing, JSON) visits 10^9 nodes: seconds and gigabytes before any check
can refuse it. Here the document is composed first; the size it expands to is counted over the
node graph (each node once, with its expanded size remembered) and a document that would expand
beyond `MAX_EXPANDED_NODES`, or that uses more than `MAX_ALIASES` aliases, is refused before any
Python object is built. Real claim files have no aliases or a handful (a shared `meta:` block).
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

from profaudit.errors import InputError
from profaudit.fmt import int_digits

MAX_ALIASES = 100
MAX_EXPANDED_NODES = 100_000
MAX_DEPTH = 100
# nodes composed at most (before aliases are expanded): a claim with 10,000 evidence paths has
# ~10,000; a real one a few hundred, a device spec ~300
MAX_NODES = 20_000


class _TooManyNodes(Exception):
    pass


class _HugeInt(Exception):
    def __init__(self, line: int, digits: int | None, limit: int):
        size = f"of {digits:,} digits, more than" if digits is not None else "of more than"
        super().__init__(f"line {line}: an integer {size} the {limit:,} Python reads")


def _refused_scalar_digits(text: str) -> int | None:
    """How many decimal digits the int of a YAML 1.1 int scalar has that int() refused for
    Python's digit limit, without building it: decimal text, its digits; a sexagesimal one
    (a:b:c, base 60: the first part times 60**k plus less than 60**k), from its first part's
    length and leading digits -- its ':'-joined text was counted as digits before (review F19-2,
    '1<5000 zeros>:30' said 5,004 digits for a value of 5,002). None where that estimate lies too
    near a power of ten to be sure."""
    parts = text.lstrip("+-").replace("_", "").split(":")
    first = parts[0].lstrip("0") or "0"
    if len(parts) == 1:
        return len(first)
    if not first.isdigit() or first == "0":  # not a sexagesimal PyYAML resolves (its first part is 1-9...)
        return None
    # log10(first * 60**k): its leading 30 digits set the mantissa to ~1e-29, the lower parts
    # add less than one in first (over 4,300 digits), floats ~1e-12 at these sizes
    x = math.log10(int(first[:30])) + (len(first) - min(len(first), 30)) + (len(parts) - 1) * math.log10(60)
    k = math.floor(x)
    return k + 1 if 1e-9 < x - k < 1 - 1e-9 else None


def _counting_loader(yaml):
    """SafeLoader that stops composing after MAX_NODES nodes: a 1.6 MB claim holding a list of
    200,000 items took 7 CPU-s (loaded machine) to compose before the alias budget refused it
    (fuzz_surfaces, session 16)."""

    class Loader(yaml.SafeLoader):
        nodes = 0

        def compose_node(self, parent, index):
            self.nodes += 1
            if self.nodes > MAX_NODES:
                raise _TooManyNodes()
            return super().compose_node(parent, index)

        def construct_yaml_int(self, node):
            # Python refuses int(text) of more than sys.get_int_max_str_digits() (4,300) decimal
            # digits, and then every message that writes the value fails the same way (repr, str,
            # f-strings). PyYAML builds 0x / 0o / 0b / sexagesimal scalars by arithmetic, which that
            # limit does not hold: a claim's or spec's `0xfff...` of 4,000 digits got as far as the
            # checks and printed Python's "Exceeds the limit" as its message (claim) or an internal
            # error (device spec, every field). Both ways in are refused here, alike, with the line.
            limit = sys.get_int_max_str_digits()
            try:
                value = super().construct_yaml_int(node)
            except ValueError:  # decimal text past the limit: int() refused it
                raise _HugeInt(node.start_mark.line + 1, _refused_scalar_digits(node.value), limit) from None
            if limit and value.bit_length() > 3 * limit and (digits := int_digits(value)) > limit:  # bits: a cheap bound first
                raise _HugeInt(node.start_mark.line + 1, digits, limit)
            return value

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    return Loader


def load(text: str, path: str | os.PathLike | None, what: str = "YAML") -> Any:
    """`yaml.safe_load(text)` with the alias and depth budget; errors are InputErrors naming `path`."""
    import yaml

    try:
        loader = _counting_loader(yaml)(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_budget(node, path, what)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(path, f"not valid {what}: {where}{problem}") from None
    except RecursionError:
        raise InputError(path, f"not valid {what}: nested more than {MAX_DEPTH} levels deep") from None
    except _TooManyNodes:
        raise InputError(path, f"{what} holds more than {MAX_NODES:,} values: refused") from None
    except _HugeInt as exc:
        raise InputError(path, f"not valid {what}: {exc}") from None
    except ValueError as exc:
        # a scalar PyYAML resolves but Python cannot build: an integer past Python's 4,300-digit
        # limit for int(str), a date such as 2026-13-45; it escaped as an internal error (exit 3,
        # review G1, session 16). Python's advice after the ';' is not the user's to follow
        raise InputError(path, f"not valid {what}: a value cannot be read: {str(exc).split(';')[0][:200]}") from None


def top_level_keys(text: str) -> list[str] | None:
    """The scalar keys of a YAML document's top-level mapping, read from its node graph without
    constructing or expanding anything (aliases stay references): what a file claims to be, even
    when `load` refuses its content. None when the text is not YAML or not a mapping."""
    import yaml

    try:
        loader = _counting_loader(yaml)(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except (yaml.YAMLError, RecursionError, _TooManyNodes):
        return None
    if not isinstance(node, yaml.MappingNode):
        return None
    return [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]


def _check_budget(root, path, what: str) -> None:
    """Count aliases (a node met again) and the expanded size, iteratively (no recursion limit)."""
    import yaml

    seen: dict[int, int] = {}  # id(node) -> expanded size, once known
    aliases = 0
    # post-order walk with an explicit stack: (node, depth, children_done)
    stack: list[tuple[Any, int, bool]] = [(root, 0, False)]
    on_stack: set[int] = set()
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if not done:
            if key in on_stack:
                raise InputError(path, f"{what} refers to itself through an alias: refused")
            if key in seen:
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise InputError(path, f"{what} uses more than {MAX_ALIASES} aliases (*name references): refused")
                continue
            if depth > MAX_DEPTH:
                raise InputError(path, f"{what} is nested more than {MAX_DEPTH} levels deep: refused")
            on_stack.add(key)
            stack.append((node, depth, True))
            for child in _children(node, yaml):
                stack.append((child, depth + 1, False))
            continue
        on_stack.discard(key)
        size = 1 + sum(seen.get(id(c), 0) for c in _children(node, yaml))
        if size > MAX_EXPANDED_NODES:
            raise InputError(path, f"{what} expands to more than {MAX_EXPANDED_NODES:,} values through its aliases: refused")
        seen[key] = size


def _children(node, yaml) -> list:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    return []
