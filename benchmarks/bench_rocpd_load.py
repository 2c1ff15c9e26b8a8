"""Loading a rocprofv3 SQLite database (rocpd, today's layout) with many kernel dispatches and
their HIP launch calls: `profaudit.load` against the bare `sqlite3` SELECT of the same rows,
measured in the same run.

The database is generated in a temporary folder with tests/rocpd_synth.py's writer (the schema's
tables, views, guid and uuid suffix): one GPU agent, 32 kernel symbols, N dispatches and N
hipLaunchKernel regions linked through their events' stack_id, every 1000 launches inside a
roctx range.

Baseline ("bare SELECT"): `sqlite3` read-only, the dispatches joined to their events and kernel
symbols (`SELECT ... FROM rocpd_kernel_dispatch K JOIN rocpd_event E ... JOIN
rocpd_info_kernel_symbol S ...`) and the regions joined to their names and events, `fetchall()`:
no demangling, no nesting, no frame. profaudit additionally builds typed frames, names and short
names, block counts, the range nesting and each kernel's enclosing marker, the launch metrics,
and conforms everything to the schema. Goal: profaudit / baseline <= 3 (measured 2.3 at 200k
dispatches on a shared 2-core machine; kernel symbols are read once and joined in polars, not
repeated on every dispatch row by SQLite).

    .venv/bin/python benchmarks/bench_rocpd_load.py [--rows 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
GOAL = 3.0


def generate(path: Path, rows: int) -> None:
    from rocpd_synth import RocpdWriter

    w = RocpdWriter(path)
    node = w.add("rocpd_info_node", hash=1, machine_id="m", hostname="h")
    w.add("rocpd_info_process", nid=node, pid=1, command="./app", environment={}, extdata={})
    gpu = w.add("rocpd_info_agent", id=2, nid=node, pid=1, type="GPU", type_index=0, name="gfx942", product_name="AMD Instinct MI300X", extdata={})
    syms = [w.add("rocpd_info_kernel_symbol", nid=node, pid=1, code_object_id=1, kernel_name=f"_Z7kernel{i}Pfi.kd", group_segment_size=256,
                  arch_vgpr_count=32, accum_vgpr_count=0, sgpr_count=16, extdata={}) for i in range(32)]
    cat_hip, cat_k, cat_m = w.string("HIP_RUNTIME_API_EXT"), w.string("KERNEL_DISPATCH"), w.string("MARKER_CORE_RANGE_API")
    name_launch, name_push = w.string("hipLaunchKernel"), w.string("roctxRangePushA")
    ev, regions, disp = [], [], []
    eid = 0
    for i in range(rows):
        t = 1000 * i
        if i % 1000 == 0:
            eid += 1
            ev.append((eid, w.guid, cat_m, -(i + 1), -(i + 1), 0, "{}", "{}", '{"message": "step %d"}' % (i // 1000)))
            regions.append((w.guid, node, 1, 7, t, t + 1000 * 1000 - 10, name_push, eid, "{}"))
        eid += 1
        ev.append((eid, w.guid, cat_hip, i + 1, i + 1, 0, "{}", "{}", "{}"))
        regions.append((w.guid, node, 1, 7, t + 10, t + 60, name_launch, eid, "{}"))
        eid += 1
        ev.append((eid, w.guid, cat_k, i + 1, i + 1, 0, "{}", "{}", "{}"))
        disp.append((w.guid, node, 1, 7, gpu, syms[i % 32], i + 1, 1, 0, t + 100, t + 100 + 300 + i % 97, 0, 256 * (i % 3),
                     256, 1, 1, 256 * (1 + i % 64), 1, 1, eid, "{}"))
    u = w.uuid
    w.con.executemany(f'INSERT INTO "rocpd_event{u}" (id, guid, category_id, stack_id, parent_stack_id, correlation_id, call_stack, line_info, extdata) '
                      "VALUES (?,?,?,?,?,?,?,?,?)", ev)
    w.con.executemany(f'INSERT INTO "rocpd_region{u}" (guid, nid, pid, tid, start, "end", name_id, event_id, extdata) VALUES (?,?,?,?,?,?,?,?,?)', regions)
    w.con.executemany(f'INSERT INTO "rocpd_kernel_dispatch{u}" (guid, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, "end", '
                      "private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, "
                      "grid_size_z, event_id, extdata) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", disp)
    w.close()


def baseline(path: Path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    k = con.execute("SELECT K.dispatch_id, K.start, K.end, K.agent_id, K.queue_id, K.pid, K.tid, K.group_segment_size, K.workgroup_size_x, "
                    "K.grid_size_x, E.stack_id, S.kernel_name, S.arch_vgpr_count FROM rocpd_kernel_dispatch K "
                    "JOIN rocpd_event E ON E.id = K.event_id JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id").fetchall()
    r = con.execute("SELECT R.start, R.end, R.tid, N.string, E.stack_id, E.extdata FROM rocpd_region R "
                    "JOIN rocpd_string N ON N.id = R.name_id JOIN rocpd_event E ON E.id = R.event_id").fetchall()
    con.close()
    return len(k) + len(r)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import profaudit

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "1_results.db"
        t0 = time.perf_counter()
        generate(path, a.rows)
        print(f"generated {a.rows} dispatches + {a.rows} launches in {time.perf_counter() - t0:.1f} s ({path.stat().st_size / 2**20:.0f} MiB)")
        base, ours = [], []
        for _ in range(a.repeat):
            t = time.perf_counter()
            n = baseline(path)
            base.append(time.perf_counter() - t)
            t = time.perf_counter()
            ps = profaudit.load(path)
            ours.append(time.perf_counter() - t)
        assert ps.kernels.height == a.rows and n == 2 * a.rows + -(-a.rows // 1000)
        assert ps.kernels["nvtx_range"].null_count() == 0
        b, o = statistics.median(base), statistics.median(ours)
        print(f"bare SELECT   {b:.3f} s (median of {a.repeat})")
        print(f"profaudit     {o:.3f} s (median of {a.repeat})")
        print(f"ratio         {o / b:.2f} (goal <= {GOAL})")
        return 0 if o / b <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
