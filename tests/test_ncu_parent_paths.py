"""The .ncu-rep parent's cheaper paths give what the plain ones gave (benchmarks/bench_ncu_load.py's
"parent" stage): protowire.decode against grouping iter_fields (same fields, same errors), and the
sorted-name prefix checks of ncu_common against scans of every name."""

from __future__ import annotations

import random

import pytest

from profaudit.parsers import ncu_common
from profaudit.parsers.protowire import WireError, decode, iter_fields


def _grouped(buf, start=0, end=None):
    out: dict[int, list] = {}
    for f, _wt, v in iter_fields(buf, start, end):
        out.setdefault(f, []).append(v)
    return out


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except WireError as exc:
        return ("error", exc.offset, exc.problem)


# bytes that make every branch: one-byte and longer keys, varints and lengths, fixed64/32, groups
# and wire types 6/7 (refused), field 0, lengths past the end
_BYTES = [0x00, 0x01, 0x08, 0x09, 0x0A, 0x0B, 0x0D, 0x0E, 0x10, 0x12, 0x7F, 0x80, 0x81, 0xFF, 0x02, 0x05]


@pytest.mark.parametrize("seed", range(4))
def test_decode_is_iter_fields_grouped(seed):
    rng = random.Random(seed)
    for _ in range(3000):
        n = rng.choice([0, 1, 2, 3, 5, 9, 17, 40])
        buf = bytes(rng.choice(_BYTES) if rng.random() < 0.8 else rng.randrange(256) for _ in range(n))
        for start, end in ((0, None), (min(1, n), n), (0, max(0, n - 1))):
            assert _outcome(decode, buf, start, end) == _outcome(_grouped, buf, start, end), (buf, start, end)


def test_decode_of_wellformed_messages():
    # a message with repeated, nested and multi-byte fields decodes as iter_fields reads it
    def varint(v):
        out = bytearray()
        while True:
            b, v = v & 0x7F, v >> 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)

    inner = varint(1 << 3) + varint(300) + varint((2 << 3) | 2) + varint(3) + b"abc"
    msg = (
        varint((1 << 3) | 0) + varint(2**63 + 5)
        + varint((20 << 3) | 2) + varint(len(inner)) + inner
        + varint((20 << 3) | 2) + varint(0)
        + varint((3 << 3) | 1) + (7).to_bytes(8, "little")
        + varint((4 << 3) | 5) + (9).to_bytes(4, "little")
        + varint((300 << 3) | 0) + varint(1)
    )
    got = decode(msg)
    assert got == _grouped(msg)
    assert got[1] == [2**63 + 5] and got[3] == [7] and got[4] == [9] and got[300] == [1] and len(got[20]) == 2


_NAMES = [
    "sm__ops_path_tensor_src_fp16_dst_fp32.sum", "sm__ops_path_tensor_src_fp16_dst_fp32.sum.per_cycle_elapsed",
    "sm__ops_path_tensor_op_hmma_src_bf16_sparsity_on.sum", "sm__ops_path_tensor_", "sm__ops_path_tensor",
    "sm__pipe_tensor_cycles_active.avg", "smsp__inst_executed_pipe_tensor.sum", "sm__inst_executed_pipe_tensor_op.sum",
    "smsp__cycles_elapsed.avg", "sm__", "smsp__", "sm_", "sm", "gpu__time_duration.sum", "dram__bytes.sum", "", "zz",
    "sm__ops_path_tensor_src_int8.sum", "sm__ops_path_tensor_src_int8", "sm__ops_path_tensor_src_tf32.sum.peak_sustained",
]


@pytest.mark.parametrize("seed", range(4))
def test_sorted_name_checks_are_the_scans(seed):
    rng = random.Random(seed)
    for _ in range(2000):
        keys = rng.sample(_NAMES, rng.randrange(len(_NAMES) + 1))
        names = ncu_common._SortedNames(keys)
        for prefixes in (ncu_common._VECTOR_HINT, ncu_common._TENSOR_PCT_HINT, ("s",), ("sm__ops_path_tensor_",), ("zzz",)):
            assert names.any_prefixed(prefixes) == any(k.startswith(prefixes) for k in keys), (keys, prefixes)
        assert names.tensor_counter_bases() == ncu_common.tensor_counter_bases(keys), keys


def test_unsortable_names_are_scanned_as_before():
    # never seen from a reader, but the scans' own outcome stays: a match before the odd key is
    # found, a non-text key reached raises as str.startswith's caller did
    assert ncu_common._SortedNames(["sm__x", 5]).any_prefixed(("sm__",)) is True
    with pytest.raises(AttributeError):
        ncu_common._SortedNames([5, 6]).any_prefixed(("sm__",))
    with pytest.raises(AttributeError):
        ncu_common._SortedNames([5, "sm__x"]).any_prefixed(("sm__",))


def test_flop_columns_unchanged_on_mixed_counters():
    # the method text depends on all three checks; a tensor counter, a percentage-only report and
    # one with no SM metrics at all
    base = {"gpu__time_duration.sum": 1000.0}
    tensor = {**base, "sm__ops_path_tensor_src_fp16_dst_fp32.sum": 4.0e6}
    pct = {**base, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 12.0}
    assert ncu_common.flop_columns(tensor)["flops_method"] == "sass-counters:none;tensor-ops-path:fp16"
    assert ncu_common.flop_columns(tensor)["flops_fp16_tensor"] == 4.0e6
    assert ncu_common.flop_columns(pct)["flops_method"] == "sass-counters:none;tensor:unknown(pct-or-inst-only)"
    assert ncu_common.flop_columns(base)["flops_method"] is None


@pytest.mark.parametrize("with_head", [False, True])
def test_chunk_frame_refuses_text_columns_of_other_lengths(with_head):
    # one gather serves all six text columns, each a slice of it: a column one row short and
    # another one row long (same total) must not shift values between them (review F19-1)
    from array import array

    from profaudit.parsers import ncu_rep
    from profaudit.parsers.ncu_child import Columns

    def chunk():
        cols = Columns()
        cols.extend(3, kernel_id=[0, 0, 0], metric=["a", "b", "c"], unit=["", "s", ""], value=[1.0, 2.0, None],
                    value_str=[None, None, "x"], value_int=[None] * 3, kind="metric")
        return cols.chunk()

    head = chunk() if with_head else None
    ch = chunk()
    assert ncu_rep._chunk_frame(ch, head).height == (6 if with_head else 3)
    ch["codes"]["metric"] = array("i", list(ch["codes"]["metric"])[:-1])
    ch["codes"]["unit"] = array("i", list(ch["codes"]["unit"]) + [0])
    with pytest.raises(ValueError, match="differ in length"):
        ncu_rep._chunk_frame(ch, head)


def test_conform_insertion_still_casts_other_dtypes():
    # the insertion path's dtype check takes `type(dt) is declared` first: a column of another
    # dtype (Int32, Float32, a number as text) must still go to the select path and be cast
    import polars as pl

    from profaudit import schema

    for col, values, dtype in (("kernel_id", [1, 2], pl.Int32), ("duration_ns", [1.5, 2.5], pl.Float32), ("grid_x", ["3", " 4"], pl.String)):
        df = pl.DataFrame({col: pl.Series(values, dtype=dtype)})
        out = schema.conform("kernels", df, "p")
        assert out.schema[col] == schema.KERNELS.polars_schema[col]
        assert out["profile_id"].to_list() == ["p", "p"]
    same = pl.DataFrame({"kernel_id": pl.Series([1, 2], dtype=pl.Int64)})
    assert schema.conform("kernels", same, "p").equals(schema.conform("kernels", same.with_columns(pl.col("kernel_id").cast(pl.Int32)), "p"))


def test_find_parser_suffix_choice_is_suffix_ok(tmp_path):
    # find_parser lowers the name once and asks each file parser's suffixes in one endswith: the
    # same parsers as _suffix_ok's per-suffix test, for every registered suffix in any case
    from profaudit.parsers import REGISTRY, _suffix_ok, find_parser, probe

    names = {"plain.bin", "x.JSON", "noext"}
    for p in REGISTRY:
        for s in p.suffixes:
            if s != "/":
                names |= {f"a{s}", f"a{s.upper()}", f"a{s}.bak"}
    for name in sorted(names):
        f = tmp_path / name
        f.write_bytes(b"not a profile\n")
        pr = probe(f)
        want = next((p for p in REGISTRY if not pr.is_dir and "/" not in p.suffixes and _suffix_ok(p, pr) and p.sniff(pr)), None)
        if want is None:
            want = next((p for p in REGISTRY if "/" not in p.suffixes and p.sniff(pr)), None)
        assert find_parser(f, pr) is want, name
