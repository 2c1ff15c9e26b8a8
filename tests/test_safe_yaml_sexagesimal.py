"""An integer scalar past Python's int/str digit limit is refused with its true number of digits
in every notation: a sexagesimal one (YAML 1.1's a:b:c, base 60) is refused by int() on its first
part, and its ':'-joined text was counted as digits ('1<5000 zeros>:30' said 5,004 digits; the
value, 10**5000 * 60 + 30, has 5,002: review F19-2)."""

from __future__ import annotations

import sys

import pytest


def _limit() -> int:
    limit = sys.get_int_max_str_digits()
    if limit == 0 or limit > 4500:
        pytest.skip("Python's int/str digit limit is off or above the test's 5,000-digit first parts")
    return limit


def _true_digits(scalar: str) -> int:
    """len(str()) of the int YAML 1.1 means by `scalar`, built with Python's limit off."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        sign, text = (-1, scalar[1:]) if scalar.startswith("-") else (1, scalar.lstrip("+"))
        value = 0
        for part in text.replace("_", "").split(":"):
            value = value * 60 + int(part)
        return len(str(abs(sign * value)))
    finally:
        sys.set_int_max_str_digits(old)


@pytest.mark.parametrize("scalar", [
    "1" + "0" * 5000 + ":30",  # 10**5000 * 60 + 30: 5,002 digits (said 5,004)
    "1" + "0" * 5000 + ":30:30",  # 5,004 (said 5,007)
    "9" * 5000 + ":59",  # 6 * 10**5001 - 1: 5,002
    "-1" + "6" * 4999 + ":0:0:0:0",  # times 60**4 = 12,960,000: 5,007
    "+12_345" + "6" * 4500 + ":1:2",
    "1" + "0" * 5000,  # decimal text: its digits, as before
    "-1" + "_0" * 5000,  # (a leading 0 would make it octal, built by arithmetic: the other way in)
])
def test_a_refused_integer_says_its_true_number_of_digits(scalar):
    from profaudit import safe_yaml
    from profaudit.errors import InputError

    limit = _limit()
    with pytest.raises(InputError) as info:
        safe_yaml.load(f"a: 1\nb: {scalar}\n", "c.yaml")
    assert str(info.value) == f"c.yaml: not valid YAML: line 2: an integer of {_true_digits(scalar):,} digits, more than the {limit:,} Python reads"


@pytest.mark.parametrize("last, digits", [("30", 5001), ("59", 5002)])
def test_next_to_a_power_of_ten_it_says_only_more_than_the_limit(last, digits):
    # 1666...6 (5,000 digits) * 60 = 10**5001 - 40: plus 30 it has 5,001 digits, plus 59 5,002.
    # The first part's leading digits cannot tell these apart, so the line claims no count
    from profaudit import safe_yaml
    from profaudit.errors import InputError

    limit = _limit()
    scalar = "1" + "6" * 4999 + ":" + last
    assert _true_digits(scalar) == digits  # the two sides of the power of ten
    with pytest.raises(InputError) as info:
        safe_yaml.load(f"b: {scalar}\n", "c.yaml")
    assert str(info.value) == f"c.yaml: not valid YAML: line 1: an integer of more than the {limit:,} Python reads"
