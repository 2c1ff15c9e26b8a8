"""A file that ends in zero bytes is refused when it is named, but a folder being walked may hold
unrelated files that end so (a preallocated log, an array of zeros saved beside the results, a
sparse image): those are skipped as any unrelated file is, and the folder loads (review F19-4: the
zero-tail check of f006b4c/027c4e2 ran before the parser lookup and made the whole folder fail)."""

from __future__ import annotations

import profaudit
import pytest

from profaudit.errors import InputError
from tests.conftest import assert_one_line_error

TIMING_CSV = "kernel,size,time_ms\nsoftmax,1024,0.125\nsoftmax,2048,0.25\n"


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    (d / "timings.csv").write_text(TIMING_CSV)
    (d / "weights.bin").write_bytes(b"\x93NUMPY" + bytes(2 << 20))  # data, then 2 MiB of zeros
    (d / "run.log").write_bytes(b"started\n" + bytes(8192))  # text, then a zero-filled block
    # a table a catch-all parser claims (its head, all the sniffing sees, is text)
    (d / "other.csv").write_bytes((TIMING_CSV + "matmul,4096,1.5\n" * 400).encode() + bytes(8192))
    return d


def test_a_walked_folder_skips_its_zero_tailed_files(folder):
    ps = profaudit.load(folder, parallel=False)
    assert len(ps) == 1 and ps.table("samples").height == 2
    # the one a parser claims is listed as skipped with the reason; the unrelated ones are not inputs
    assert [(p.rsplit("/", 1)[-1], "zero bytes" in why) for p, why in ps.skipped] == [("other.csv", True)]


def test_the_cli_loads_the_folder_and_names_the_skipped_file(folder, cli):
    res = cli("summary", folder)
    assert res.code == 0, res.err
    assert [l for l in res.err.splitlines() if l.startswith("warning: skipped")] == [
        f"warning: skipped {folder / 'other.csv'}: text that ends in 4,096 or more zero bytes (NUL): the file was "
        "preallocated or zero-filled by a crash; take it again from where it was written"]


@pytest.mark.parametrize("name, kind", [("weights.bin", "data"), ("run.log", "text"), ("other.csv", "text")])
def test_a_named_zero_tailed_file_is_still_refused(folder, cli, name, kind):
    with pytest.raises(InputError, match=f"{kind} that ends in"):
        profaudit.load(folder / name, parallel=False)
    assert_one_line_error(cli("summary", folder / name), "or more zero bytes (NUL)")
