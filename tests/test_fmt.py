"""The one number formatter (`profaudit.fmt`): exact integers exact, rounded numbers visibly rounded."""

from __future__ import annotations

import math

import pytest

from profaudit import fmt


@pytest.mark.parametrize(
    "v, want",
    [
        (134_243_200, "134,243,200"),
        (134_243_200.0, "134,243,200"),  # an exact integer stored as a double (ncu counters)
        (431_648.25, "431,648.2"),  # not exact: a decimal shows it
        (97.8125, "97.81"),
        (0.000123, "0.000123"),
        (0.0000123, "1.230e-5"),
        (None, "—"),
        (math.nan, "—"),
        (True, "True"),
        (2.0**60, "1.153e+18"),  # beyond 2**53 a float integer is not exact
    ],
)
def test_fmt_num(v, want):
    assert fmt.fmt_num(v) == want


@pytest.mark.parametrize(
    "ns, want",
    [(512, "512 ns"), (999.9, "1.00 µs"), (97_812_500.0, "97.8 ms"), (3.2e9, "3.20 s"), (12.5, "12.5 ns"), (None, "—")],
)
def test_fmt_ns(ns, want):
    assert fmt.fmt_ns(ns) == want


def test_quantities_and_units():
    assert fmt.fmt_quantity(97.8125, "msecond") == "97.8 ms"
    assert fmt.fmt_quantity(2, "sec") == "2.00 s" and fmt.fmt_quantity(3, "usecond") == "3.00 µs"  # profaudit.samples' unit spellings
    assert fmt.fmt_quantity(2, "min") == "2 min"  # 'min' is a minimum in timing logs, never minutes
    assert fmt.fmt_quantity(1_127_040, "byte") == "1.13 MB"
    assert fmt.fmt_quantity(512, "byte") == "512 B"
    assert fmt.fmt_quantity(2.227e9, "hz") == "2.23 GHz"
    assert fmt.fmt_quantity(2.77e9, "byte/s") == "2.77 GB/s"
    assert fmt.fmt_quantity(0.04, "%") == "<0.1%"
    assert fmt.fmt_quantity(1_024, "thread") == "1,024 thread"
    assert fmt.fmt_pct(-2.5, signed=True) == "-2.5%"
    assert fmt.fmt_x(1.25) == "1.25x"
    assert fmt.plural(1, "claim") == "1 claim" and fmt.plural(1204, "kernel") == "1,204 kernels"
    assert fmt.plural(2, "launch", "launches") == "2 launches"


@pytest.mark.parametrize("v, missing", [(None, True), (math.nan, True), (math.inf, True), ("abc", True), (0.0, False), (3, False), ("2.5", False)])
def test_is_missing_is_what_prints_as_missing(v, missing):
    assert fmt.is_missing(v) is missing
    assert (fmt.fmt_x(v) == fmt.MISSING) is missing


def test_speedup_with_its_interval():
    assert fmt.fmt_interval(1.1, 1.4) == "[1.10, 1.40]"
    assert fmt.fmt_interval(None, 1.4) == fmt.MISSING and fmt.fmt_interval(0.5, math.inf) == fmt.MISSING
    assert fmt.fmt_speedup(1.25, 1.1, 1.4) == "1.25x [1.10, 1.40]"
    assert fmt.fmt_speedup(1.25) == "1.25x" and fmt.fmt_speedup(1.25, math.nan, 2.0) == "1.25x"
    assert fmt.fmt_speedup(None, 1.1, 1.4) == fmt.MISSING
    assert fmt.fmt_speedup(1234.5, 1000, 1500) == "1.23e+03x [1e+03, 1.5e+03]"  # fmt_x's own form at 1,000x and up


def test_time_unit_is_the_unit_fmt_ns_picks():
    assert fmt.time_unit(97.8e6) == ("ms", 1e6) and fmt.time_unit(-2e9) == ("s", 1e9) and fmt.time_unit(999) == ("ns", 1.0)
    for ns in (5, 999.4, 1_000, 45_600, 97.8e6, 3.2e9):
        assert fmt.fmt_ns(ns).endswith(" " + fmt.time_unit(ns)[0])


@pytest.mark.parametrize("x, low, high, shown", [
    (10**300, -(2**63), 2**63 - 1, "1e+300"),  # six digits, not 301 (a damaged .ncu-rep's grid size)
    (2**70, -(2**63), 2**63 - 1, "1.18059e+21"),
    (-(2**64), -(2**63), 2**63 - 1, "-1.84467e+19"),
    (2**63, -(2**63), 2**63 - 1, "9223372036854775808"),  # "9.22337e+18" would read as in range
    (-(2**63) - 1, -(2**63), 2**63 - 1, "-9223372036854775809"),
    (10**9 + 1, 1, 1e9, "1000000001"),
    (1.0000001e9, 1, 1e9, "1000000100.0"),
    (2e9, 1, 1e9, "2e+09"),
    (0.5, 1, 1e9, "0.5"),
    (10**400, 1, 1e9, "an integer of 401 digits"),  # past a float's range: :g cannot take it
])
def test_a_refused_figure_in_six_digits_unless_they_round_it_into_range(x, low, high, shown):
    assert fmt.fmt_refused(x, low, high) == shown


def test_a_refused_integer_past_pythons_int_to_text_limit():
    # its exact count of digits, though str() of it raises under Python's 4,300-digit limit
    # (it printed "an integer of over 4,300 digits" before s19)
    assert fmt.fmt_refused(1 << 20000, 1, 1e9) == "an integer of 6,021 digits"


def test_int_digits_is_len_of_str():
    import random
    import sys

    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # so that str() can check values past the limit
    try:
        rng = random.Random(19)
        edges = [10**k + d for k in range(0, 1200, 7) for d in (-1, 0, 1)]  # where the estimate can be off
        values = [0, 1, 9, 10, -10, 2**63, -(2**64)] + edges + [rng.getrandbits(rng.randint(1, 25000)) for _ in range(400)]
        for n in values:
            assert fmt.int_digits(n) == len(str(abs(n))), n
    finally:
        sys.set_int_max_str_digits(old)


def test_the_three_refusals_of_a_huge_integer_agree(tmp_path):
    # device-spec values, claim meta values and refused figures wrote "an integer of N digits" each
    # their own way: two without thousands separators (a 1,001-digit value read "1001 digits")
    from profaudit.audit.claim import _to_float
    from profaudit.specs import _Bad, _num

    n = 10**1000  # 1,001 digits: past a float, under Python's int/str limit
    with pytest.raises(_Bad) as spec:
        _num(n, "compute_units.value")
    with pytest.raises(ValueError) as claim:
        _to_float(n)
    assert str(spec.value) == "compute_units.value must be a finite number, got an integer of 1,001 digits"
    assert str(claim.value) == "expected a finite number >= 0, got an integer of 1,001 digits"
    assert fmt.fmt_refused(n, 1, 1e9) == "an integer of 1,001 digits"
