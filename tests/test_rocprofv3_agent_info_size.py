"""rocprofv3's agent_info.csv lists one row per agent (each CPU core and GPU of the node) and is
read again for every trace beside it: past AGENT_INFO_LIMIT it is refused from its size, before it
is read (fuzz_long seed 3103, rocprofv3-csv-dir #145: a 200 MB blow-up of 1.94 M agent rows grew
a worker by 1.26 GB)."""

from __future__ import annotations

from conftest import assert_one_line_error
from profaudit.parsers import rocprofv3_csv

_AGENTS = '"Node_Id","Logical_Node_Id","Agent_Type","Product_Name"\n'
_KT = ('"Kind","Agent_Id","Queue_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id","Private_Segment_Size",'
       '"Group_Segment_Size","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z",'
       '"Start_Timestamp","End_Timestamp"\n'
       '"KERNEL_DISPATCH","Agent 1",1,9,1,3,"add",1,0,0,64,1,1,1024,1,1,100,200\n')


def _folder(tmp_path, agents: int):
    (tmp_path / "4242_agent_info.csv").write_text(_AGENTS + "".join(f'{i},{i},"GPU","MI300X"\n' for i in range(agents)))
    (tmp_path / "4242_kernel_trace.csv").write_text(_KT)
    return tmp_path


def test_an_agent_info_past_the_limit_is_refused_from_its_size(tmp_path, monkeypatch, cli):
    d = _folder(tmp_path, 2000)
    size = (d / "4242_agent_info.csv").stat().st_size
    monkeypatch.setattr(rocprofv3_csv, "AGENT_INFO_LIMIT", size - 1)
    scan = rocprofv3_csv.Rocprofv3CsvParser._scan

    def no_agent_read(p):  # the size alone refuses it: agent_info.csv is never scanned
        assert not p.name.endswith("agent_info.csv"), f"read {p}"
        return scan(p)

    monkeypatch.setattr(rocprofv3_csv.Rocprofv3CsvParser, "_scan", staticmethod(no_agent_read))
    assert_one_line_error(cli("summary", d / "4242_kernel_trace.csv"),
                          f"agent_info.csv of {size:,} bytes: rocprofv3 writes one row per CPU core and GPU of the node (kilobytes); refused over {size - 1:,} bytes")


def test_at_the_limit_it_is_read(tmp_path, monkeypatch, cli):
    d = _folder(tmp_path, 2000)
    monkeypatch.setattr(rocprofv3_csv, "AGENT_INFO_LIMIT", (d / "4242_agent_info.csv").stat().st_size)
    res = cli("summary", d / "4242_kernel_trace.csv")
    assert res.code == 0, res.err
    assert "add" in res.out
