"""Fuzz the user inputs that are not a profile: claim files, batch audits, compare-pairs CSVs,
damaged datasets, device-spec files and dashboard uploads.

tools/fuzz_long.py fuzzes every parser's input; this tool fuzzes what a user hands profaudit
around those files. Each input runs the way a user runs it (`profaudit.cli.main` with the
command's arguments; the dashboard's `store_uploads` and claim audit called directly) in a child
forked from a parent that has imported profaudit but run nothing in polars (a forked child then
starts polars' thread pool afresh). Each input gets one verdict:

  ok            exit 0/1 with output that checks out (a verdict table right for the good claims)
  deliberate    exit 2 and exactly one line, `profaudit: error: ...` (an upload: a refusal line)
  undeliberate  anything else: the internal-error catch-all, a traceback, more than one line, a
                half-written or left-over output file, a batch table wrong for its good claims, an
                upload message showing the server's folder or a file written outside it
  crash         the child died of a signal
  timeout       more than --cpu-s CPU seconds, or no CPU progress for --stall-s (blocked on a
                FIFO, a device file ...)
  memory        peak RSS over --mem-mb, or a file written past FILE_CAP_MB (1 GiB)

Everything is seeded: the input of (surface, i) follows from --seed and the seeds, whatever
--workers. A batch draws seed claims weighted by their audit's CPU cost as measured when the
seeds were built (seeds.json), which varies from machine to machine: replay a batch input with
the run's own --seeds-dir (review F18-4); every other surface follows from --seed alone.
Inputs that are neither ok nor deliberate are kept under OUT/repro/<surface>_<i>/ (the input,
`case.json` with the command and what was done to it, and the child's output).

    nice -n 19 .venv/bin/python tools/fuzz_surfaces.py --per-surface 2000 --workers 2 --out /tmp/fs
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import io
import json
import os
import random
import resource
import shutil
import signal
import stat
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # tests.fuzz.mutators, C's mutators, reused as they are

SURFACES = ("claim", "batch", "pairs", "dataset", "spec", "upload")
VERDICTS = ("ok", "deliberate", "undeliberate", "crash", "timeout", "memory")
CLAIMS = REPO / "sample_reports" / "claims"
# the audit's exit code of each verdict (profaudit.batch._AUDIT_EXIT), restated so the check is
# independent of the code it checks
AUDIT_EXIT = {"PASS": 0, "WARN": 0, "INCONCLUSIVE": 1, "FAIL": 1, "ERROR": 2}
EVIDENCE_KEYS = ("timings", "profile")
FILE_CAP_MB = 1024  # the largest file an input's child may write (RLIMIT_FSIZE)


# ------------------------------------------------------------------------------------------------
# seeds (built once per run, in a forked child where polars is needed)
# ------------------------------------------------------------------------------------------------
def _abs_evidence(doc: dict, base: Path) -> dict:
    """A claim with its evidence paths made absolute, so a copy written anywhere finds them."""
    for role in ("baseline", "candidate"):
        side = doc.get(role)
        if not isinstance(side, dict):
            continue
        for key in EVIDENCE_KEYS:
            v = side.get(key)
            if isinstance(v, str):
                side[key] = str((base / v).resolve())
            elif isinstance(v, list):
                side[key] = [str((base / x).resolve()) for x in v]
    return doc


def claim_seeds() -> list[dict]:
    import yaml

    out = []
    for p in sorted(CLAIMS.glob("*.yaml")):
        out.append({"name": p.name, "doc": _abs_evidence(yaml.safe_load(p.read_text()), p.parent)})
    return out


def evidence_files(seeds: list[dict]) -> list[str]:
    files = []
    for s in seeds:
        for role in ("baseline", "candidate"):
            v = s["doc"][role].get("timings") or s["doc"][role].get("profile")
            files += [v] if isinstance(v, str) else list(v)
    return sorted(set(files))


def spec_seeds() -> list[Path]:
    return sorted((REPO / "device_specs").glob("*.yaml"))


def _build_seeds(work: Path, claims: list[dict]) -> dict:
    """Datasets (layout 2 of two batches, layout 1) and each seed claim's and pair's verdict, as
    the single-claim code gives them: what a batch's row for a good claim must say."""
    import yaml

    from profaudit.batch import audit_row, compare_row
    from profaudit.dataset import write_dataset
    from profaudit.loader import load
    from profaudit.profile import ProfileSet
    # the layout-1 form profaudit 0.1 wrote, as the dataset tests build it
    from tests.test_dataset_v2 import _write_layout_1

    work.mkdir(parents=True, exist_ok=True)
    files = evidence_files(claims)
    expect_claims = {}
    from profaudit.specs import _package_specs

    _package_specs()  # read once before the claims are timed: the first audit would pay for it
    for s in claims:
        p = work / "claims" / s["name"]
        p.parent.mkdir(exist_ok=True)
        p.write_text(yaml.safe_dump(s["doc"], sort_keys=False))
        t0 = time.process_time()
        row = audit_row(str(p))
        t1 = time.process_time()
        audit_row(str(p))
        # the cost a batch weighs its picks by: the lower of two audits, as the first claim's first
        # audit also paid for the audit's lazy imports (1.9 CPU-s for a claim whose audit is 0.07)
        expect_claims[s["name"]] = {"verdict": row["verdict"], "supported_speedup_x": row.get("supported_speedup_x"), "path": str(p),
                                    "cpu_s": min(t1 - t0, time.process_time() - t1)}
    pairs = []
    for s in claims[:4]:
        b, c = (s["doc"][r].get("timings") for r in ("baseline", "candidate"))
        b, c = (x if isinstance(x, str) else x[0] for x in (b, c))
        row = compare_row("p", b, c)
        pairs.append({"baseline": b, "candidate": c, "verdict": row.get("verdict"), "speedup_x": row.get("speedup_x")})
    ds2 = work / "ds2"
    write_dataset(ProfileSet(load(files[:2])), ds2)
    write_dataset(ProfileSet(load(files[2:4])), ds2)  # a second batch: two manifests
    ds1 = work / "ds1"
    ds1.mkdir()
    _write_layout_1(ProfileSet(load(files[:3])), ds1)
    return {"claims": expect_claims, "pairs": pairs, "ds": [str(ds2), str(ds1)], "files": files}


def setup(work: Path) -> dict:
    """Seeds, built in a forked child (the parent must not start polars' thread pool); a folder
    that already holds them (--seeds-dir of an earlier run) is reused as it is."""
    claims = claim_seeds()
    out = work / "seeds.json"
    if out.exists():
        info = json.loads(out.read_text())
        info["claim_docs"] = claims
        info["specs"] = [str(p) for p in spec_seeds()]
        return info
    work.mkdir(parents=True, exist_ok=True)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                info = _build_seeds(work / "seeds", claims)
            # what a whole audit, compare and dataset read imported: the parent imports the same,
            # so each forked input starts warm (a cold child spent ~3 CPU-s importing, a warm 0.6)
            info["modules"] = sorted(m for m in sys.modules if m.startswith(("profaudit", "polars", "pyarrow", "scipy", "numpy", "rich", "yaml", "fsspec")))
            out.write_text(json.dumps(info))
        except BaseException as exc:  # the parent reports it; a traceback here would be lost
            out.write_text(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
            code = 1
        os._exit(code)
    os.waitpid(pid, 0)
    info = json.loads(out.read_text())
    if "error" in info:
        raise SystemExit(f"fuzz_surfaces: building the seeds failed: {info['error']}")
    info["claim_docs"] = claims
    info["specs"] = [str(p) for p in spec_seeds()]
    return info


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------
# values a red team puts in any field
ODD_VALUES = (None, True, 0, -1, -0.0, 2**63, 2**64, 10**400, 1e308, float("inf"), float("-inf"), float("nan"), "", "x", "nan",
              "inf", "1e309", "-3", "2.1x", [], {}, [1, 2], {"a": 1}, [[[[]]]], "\u202e\u0000é", "🚀" * 50, "a" * 100_000,
              "/dev/zero", "../../../../etc/passwd", "s3://", "memory://nothing", "::", "file:///nonexistent", 1.5, 2, "median", "p99")


def _yaml_text(doc, rng: random.Random) -> tuple[str, str]:
    """The document as YAML or as JSON (YAML's subset; a claim file may be either)."""
    import yaml

    if rng.random() < 0.4:
        try:
            return json.dumps(doc, allow_nan=True, ensure_ascii=rng.random() < 0.5), "json"
        except (ValueError, RecursionError):
            pass
    allow_unicode = rng.random() < 0.5
    try:
        # libyaml's emitter, ~16x faster than PyYAML's: the parent writes every input alone, and
        # the pure-Python emitter on 100,000-character values and 10,000-item lists made it the
        # run's bottleneck (~0.1 CPU-s per claim). Its text loads to the same document
        return yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, allow_unicode=allow_unicode), "yaml"
    except (yaml.YAMLError, RecursionError, ValueError):
        pass
    try:
        # what libyaml refuses to write (a lone surrogate), PyYAML's emitter still writes as it
        # always did: text that does not load back, a claim file the loader must refuse
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=allow_unicode), "yaml"
    except (yaml.YAMLError, RecursionError, ValueError):
        return json.dumps(doc, allow_nan=True), "json"


def _yaml_tricks(text: str, rng: random.Random) -> tuple[str, str]:
    """YAML-only damage: aliases (billion laughs, self-reference), tags, several documents,
    merge keys, deep flow nesting, huge lists, anchors on the evidence."""
    op = rng.choice(["laughs", "self", "tag", "multidoc", "merge", "deep", "biglist", "anchor_side", "dup_key", "bom", "tab"])
    if op == "laughs":
        levels = rng.choice([3, 5, 9])
        lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        for k in range(1, levels):
            lines.append(f"a{k}: &a{k} [" + ",".join([f"*a{k - 1}"] * 10) + "]")
        return "\n".join(lines) + f"\nbaseline: *a{levels - 1}\n" + text, f"billion laughs {levels} levels"
    if op == "self":
        return "baseline: &s [1, *s]\n" + text, "alias to itself"
    if op == "tag":
        tag = rng.choice(["!!python/object/apply:os.system ['echo pwned']", "!!binary AAAA", "!!set {a, b}", "!!timestamp 2001-12-14", "!custom x",
                          "!!float .nan", "!!int 0x1F", "!!omap [a: 1]", "!!python/name:os.system"])
        return text.replace("speedup:", f"speedup: {tag} #", 1) if "speedup:" in text else f"speedup: {tag}\n" + text, f"tag {tag[:30]}"
    if op == "multidoc":
        return text + "\n---\n" + text, "two documents"
    if op == "merge":
        return "base: &b {label: x, timings: /nonexistent}\n" + text.replace("baseline:\n", "baseline:\n  <<: *b\n", 1), "merge key"
    if op == "deep":
        d = rng.choice([50, 99, 101, 1000, 20000])
        return f"speedup: {'[' * d}1{']' * d}\n" + text, f"flow nesting {d} deep"
    if op == "biglist":
        n = rng.choice([10_000, 200_000])
        return f"intended_differences: [{', '.join(['device'] * n)}]\n" + text, f"list of {n}"
    if op == "anchor_side":
        return text.replace("candidate:", "candidate: *side\nx_candidate:", 1).replace("baseline:", "baseline: &side", 1), "candidate is an alias of baseline"
    if op == "dup_key":
        return text + "\nspeedup: 99\n", "duplicate key"
    if op == "bom":
        return "\ufeff" + text, "BOM"
    return text.replace("  ", "\t", 3), "tabs for indentation"


def _evidence_damage(doc: dict, case: Path, rng: random.Random, others: list[Path]) -> str:
    """Point a side's evidence at something that is not a readable timing log."""
    from tests.fuzz import mutators

    role = rng.choice(["baseline", "candidate"])
    side = doc.get(role)
    if not isinstance(side, dict):
        return "no side to damage"
    key = "timings" if "timings" in side else "profile"
    cur = side.get(key)
    claim_dir = case
    # each damage's files in a folder of their own: several damaged claims share one batch folder,
    # and two damages may pick the same link or FIFO name (a FileExistsError in the generator)
    k = 0
    while (case / f"ev{k}").exists():
        k += 1
    case = case / f"ev{k}"
    case.mkdir()
    src = cur if isinstance(cur, str) else (cur[0] if isinstance(cur, list) and cur and isinstance(cur[0], str) else None)
    try:
        # only a real log is read or copied: an earlier damage of this claim may have pointed the
        # side at /proc/self/mem (a "regular" file whose read fails) or a link to /dev/zero
        src_is_file = bool(src) and _plain_file(Path(src)) and not os.path.realpath(src).startswith(("/proc/", "/sys/", "/dev/"))
    except (OSError, ValueError):  # an earlier edit made it a name no file system takes
        src_is_file = False
    op = rng.choice(["missing", "folder", "emptyfolder", "selflink", "looplink", "dangling", "fifo", "devzero", "devnull", "claim_itself",
                     "other_claim", "damaged", "damaged", "damaged", "empty", "url", "list_mixed", "relative_up", "huge_list", "nul",
                     "folderlink", "ten_thousand", "ten_thousand_missing", "fifo_in_list", "unreadable", "proc"])
    if op == "missing":
        val = str(case / "no_such.jsonl")
    elif op == "folder":
        val = str(Path(src).parent) if src else str(case)
    elif op == "emptyfolder":
        (case / "empty.d").mkdir(exist_ok=True)  # two damages in one claim may both pick it
        val = str(case / "empty.d")
    elif op == "selflink":
        os.symlink("self.jsonl", case / "self.jsonl")
        val = str(case / "self.jsonl")
    elif op == "looplink":
        os.symlink("loop_b.jsonl", case / "loop_a.jsonl")
        os.symlink("loop_a.jsonl", case / "loop_b.jsonl")
        val = str(case / "loop_a.jsonl")
    elif op == "dangling":
        os.symlink(str(case / "gone"), case / "dangling.jsonl")
        val = str(case / "dangling.jsonl")
    elif op == "fifo":
        os.mkfifo(case / "fifo.jsonl")
        val = str(case / "fifo.jsonl")
    elif op == "devzero":
        val = "/dev/zero"
    elif op == "devnull":
        val = "/dev/null"
    elif op == "claim_itself":
        val = "claim.yaml"
    elif op == "other_claim":
        # a claim as evidence of another claim, which names the first back
        other = case / "other.yaml"
        other.write_text(f"baseline: {{timings: {claim_dir / 'claim.yaml'}}}\ncandidate: {{timings: {claim_dir / 'claim.yaml'}}}\n")
        val = str(other)
    elif op in ("damaged", "empty") and src_is_file:
        data = Path(src).read_bytes()
        m = mutators.mutate(data, "timing-log", rng) if op == "damaged" else mutators.Mutant(b"", "empty")
        dst = case / ("ev_" + Path(src).name)
        dst.write_bytes(m.data)
        val = str(dst)
        op = f"{op}: {m.label[:80]}"
    elif op == "url":
        val = rng.choice(["s3://", "s3:///x.jsonl", "http://[::1", "memory://a.jsonl", "file://", "zip://x::file:///nope", "gs://b/" + "a" * 3000, "://", "c:\\x.jsonl"])
    elif op == "list_mixed":
        val = [src or "x", 3, None, {"a": 1}]
    elif op == "relative_up":
        val = "../" * 40 + "etc/passwd"
    elif op == "huge_list":
        val = [src or "x"] * rng.choice([2000, 50_000])
    elif op == "folderlink":
        os.symlink(str(Path(src).parent) if src else "/", case / "dir.jsonl")
        val = str(case / "dir.jsonl")
    elif op == "ten_thousand":
        # 10,000 entries naming the same real log: the claim must be refused or bounded, not
        # read 10,000 times
        val = [src or "x"] * 10_000
    elif op == "ten_thousand_missing":
        val = [str(case / f"run{k}.jsonl") for k in range(10_000)]
    elif op == "fifo_in_list":
        os.mkfifo(case / "fifo.jsonl")
        val = [src or "x", str(case / "fifo.jsonl")]
    elif op == "unreadable" and src_is_file:
        dst = case / "noperm.jsonl"
        shutil.copyfile(src, dst)
        os.chmod(dst, 0)  # root reads it anyway: then it is an intact copy, which is fine
        val = str(dst)
    elif op == "proc":
        val = rng.choice(["/proc/self/mem", "/proc/self/environ", "/dev/urandom", "/sys/kernel/notes"])
    else:
        val = (src or "x") + "\x00.jsonl"
    side[key] = val
    return f"{role}.{key} -> {op}"


def _serialised(doc, rng: random.Random, labels: list[str], tricks_rate: float) -> bytes:
    """The document's bytes as YAML or JSON, now and then with YAML tricks or raw-byte damage."""
    from tests.fuzz import mutators

    text, how = _yaml_text(doc, rng)
    labels.append(how)
    if how == "yaml" and rng.random() < tricks_rate:
        text, label = _yaml_tricks(text, rng)
        labels.append(label)
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.15:
        m = rng.choice(mutators.BYTE_MUTATORS)(data, rng)
        data = m.data
        labels.append(m.label[:60])
    return data


# hostile values by what a field holds: a claim that parses everywhere else reaches the code that
# uses the field (rules, statistics, rendering), not only the first validation that meets it
HOSTILE_NUMBERS = (0, -0.0, -1, -1e308, 1e308, 1e-320, 5e-324, float("nan"), float("inf"), float("-inf"), 2**53 + 1, 2**63, 2**64, -(2**63),
                   10**400, "1e309", "-0", "0x10", "1_000", "5.04x", "x5.04", "NaN", ".inf", "5,04", " 2 ", "1e-400", 1.5)
WRONG_TYPES = (None, True, False, [], {}, [1], [[1]], {"value": 1}, "", "x" * 100_000, "\u202e\u0000", 3)
HOSTILE_BY_KIND = {
    "int": (0, -1, 1.5, 2**64, 10**400, 1e308, float("nan"), "12", "1e3"),
    "float": (0, -1, 1e308, -1e308, 1e-320, float("nan"), float("inf"), 10**400, "1e309", "3 GB"),
    "bool": ("yes", "no", "maybe", 2, -1, 0.5, "true", "False", "on"),
    "dtype": ("fp128", "FP16", "torch.bfloat16", "int4", "fp8_e4m3", "float", "tf32", "fp32 ", "x" * 300),
    "shape": ("99999999999x99999999999x99999999999", [2**62, 2**62, 2**62], {"m": -1, "n": 0}, [0], [-4, 4], "1x", "x", [1.5, 2], [[1]],
              [10**400], "0x0x0", "4096x4096x4096x4096x4096x4096x4096x4096"),
    "str": ("", " ", "\x00", "x" * 100_000, "é" * 300, "none", "None", "🚀"),
    "pids": (-1, 10**400, [1, 2, "x"], ["a"] * 10_000, 2**64, float("nan")),
    "versions": ({"torch": 2.0}, {"": ""}, "torch 2", [1], {"torch": None}, {"x" * 1000: "1"}),
    "checked": ("maybe", "before", 2, None, "both "),
}
TOP_FIELD_KIND = {"speedup": "num", "confidence": "num", "noise_threshold": "num", "statistic": "statistic", "version": "num",
                  "device": "str", "claim": "str", "notes": "str", "intended_differences": "list_of_keys"}
WORKLOAD_FIELD_KIND = {"flops": "num", "bytes": "num", "precision": "dtype", "sparse": "bool"}
SIDE_FIELD_KIND = {"label": "str", "benchmark": "str", "variant": "str", "params": "params", "kernel": "regex", "time_column": "str", "time_unit": "unit"}
STATISTICS = ("p0", "p100", "p101", "p-1", "p50.5", "p99.999999999", "pnan", "p1e308", "trimmed_mean", "best_of", "min", "max", "mean ", "MEDIAN",
              "total", "geomean", "", "p", "p9" * 200)


def _hostile_for(kind: str, rng: random.Random):
    if kind == "num":
        return rng.choice(HOSTILE_NUMBERS + WRONG_TYPES)
    if kind == "statistic":
        return rng.choice(STATISTICS + WRONG_TYPES)
    if kind == "list_of_keys":
        return rng.choice([["device", "device"], ["nonexistent_key"], ["dtype"] * 10_000, [None], [["dtype"]], "dtype", 5, {"dtype": 1}])
    if kind == "params":
        return rng.choice([{"Axis Size": 10**400}, {"": ""}, {"n": [1, 2]}, {"n": None}, "n=3", [1], {"x" * 1000: 1}, {"n": float("nan")}])
    if kind == "regex":
        return rng.choice(["(", "(a+)+$", "(" * 5000 + ")" * 5000, ".*" * 1000, "[", "\\", "x" * 100_000, "(?P<a>)(?P<a>)"])
    if kind == "unit":
        return rng.choice(["ps", "weeks", "", "1e308", "s ", "ns/iter", "µs", "us", "NaN", "cycles", "ms" * 1000])
    pool = HOSTILE_BY_KIND.get(kind, HOSTILE_BY_KIND["str"])
    return rng.choice(pool + WRONG_TYPES) if rng.random() < 0.25 else rng.choice(pool)


def _hostile_claim_value(doc: dict, rng: random.Random) -> str:
    """Set one field the claim format knows (a top key, a workload key, a side key, a meta key of
    the side) to a hostile value of its kind or of the wrong type; everything else stays valid."""
    from profaudit.audit.claim import META_KEYS

    where = rng.random()
    if where < 0.3:
        key = rng.choice(sorted(TOP_FIELD_KIND))
        val = _hostile_for(TOP_FIELD_KIND[key], rng)
        doc[key] = val
        return f"hostile {key} = {val!r:.40}"
    if where < 0.4:
        key = rng.choice(sorted(WORKLOAD_FIELD_KIND))
        val = _hostile_for(WORKLOAD_FIELD_KIND[key], rng)
        if not isinstance(doc.get("workload"), dict):
            doc["workload"] = {}
        doc["workload"][key] = val
        return f"hostile workload.{key} = {val!r:.40}"
    roles = [r for r in ("baseline", "candidate") if isinstance(doc.get(r), dict)]
    if not roles:
        return "no side for a hostile value"
    role = rng.choice(roles)
    side = doc[role]
    if where < 0.55:
        key = rng.choice(sorted(SIDE_FIELD_KIND))
        val = _hostile_for(SIDE_FIELD_KIND[key], rng)
        side[key] = val
        return f"hostile {role}.{key} = {val!r:.40}"
    # meta keys: the facts the rules compute with (clocks, shapes, byte and FLOP counts ...);
    # sometimes both sides get one, so a rule comparing them sees two hostile values
    key = rng.choice(sorted(META_KEYS))
    val = _hostile_for(META_KEYS[key][0], rng)
    sides = roles if rng.random() < 0.3 else [role]
    for r in sides:
        if not isinstance(doc[r].get("meta"), dict):
            doc[r]["meta"] = {}
        doc[r]["meta"][key] = val
    return f"hostile {'+'.join(sides)}.meta.{key} = {val!r:.40}"


def make_claim(case: Path, rng: random.Random, seeds: dict, name: str = "claim.yaml") -> str:
    """Write one damaged claim file; returns what was done to it."""
    import copy

    from tests.fuzz import mutators

    doc = copy.deepcopy(rng.choice(seeds["claim_docs"])["doc"])
    labels = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        op = rng.random()
        if op < 0.3 and isinstance(doc, dict):
            labels.append(_hostile_claim_value(doc, rng))
            continue
        op = rng.random()
        if op < 0.35:
            try:
                doc, label = mutators.mutate_json_doc(doc, rng)
            except (KeyError, IndexError, TypeError):
                label = "json edit skipped"
            if "\x00" in label:  # C's "nest N deep" marker: built as text in _dumps
                label = label.split("\x00", 1)[0]
            labels.append(label)
        elif op < 0.6:
            path, node = rng.choice(list(mutators._nodes(doc)))
            val = rng.choice(ODD_VALUES)
            if path:
                mutators._set(doc, path, val)
            labels.append(f"set {list(path)[-3:]} = {val!r:.30}")
        elif op < 0.75 and isinstance(doc, dict):
            key = rng.choice(["extra", "version", "speedup", "statistic", "workload", "confidence", "intended_differences", "meta", "device", "claim", "\u00e9\u00e9", ""])
            doc[key] = rng.choice(ODD_VALUES)
            labels.append(f"top key {key!r}")
        elif isinstance(doc, dict):
            labels.append(_evidence_damage(doc, case, rng, []))
    (case / name).write_bytes(_serialised(doc, rng, labels, 0.3))
    return "; ".join(labels)


def gen_claim(case: Path, rng: random.Random, seeds: dict) -> dict:
    label = make_claim(case, rng, seeds)
    fmt = rng.choice(["json", "json", "text", "markdown", "html"])
    argv = ["audit", str(case / "claim.yaml"), "-f", fmt]
    out = None
    if fmt != "text" or rng.random() < 0.5:
        out = str(case / "out" / f"report.{fmt}")
        argv += ["-o", out]
    if rng.random() < 0.1:
        argv += ["--sarif", str(case / "out" / "r.sarif")]
    if rng.random() < 0.15:
        # rule selection by code prefix: unknown codes, empty lists, everything excluded
        opt = rng.choice(["--select", "--ignore"])
        val = rng.choice(["PA999", "PA", "", ",", "PA1,PA999", "pa101", "XX", "PA1" * 1000, "*", "PA101,PA101", "PA5,,PA2", " PA1 ", "\x00"])
        argv += [opt, val]
        label += f"; {opt} {val!r:.30}"
    return {"kind": "cli", "argv": argv, "label": label, "outputs": [out] if out else [], "out_dir": str(case / "out")}


def _odd_name(rng: random.Random, i: int) -> str:
    return rng.choice([f"c{i}.yaml", f"c {i} é.yaml", f"c{i}\n.yaml", f"-c{i}.yaml", f"c{i}.YML", "ü" * 60 + f"{i}.yaml", f"c{i}[1].yaml"])


def gen_batch(case: Path, rng: random.Random, seeds: dict) -> dict:
    """A folder of claims, some good (copies of seed claims whose verdicts are known), some
    damaged; sometimes a glob instead of the folder."""
    import yaml

    d = case / "claims"
    d.mkdir()
    good, labels = {}, []
    # each claim that parses is audited in full (10,000 bootstrap resamples): ~0.07 CPU-s for the
    # three harness claims, 0.3-0.7 for the softmax ones, which made batches 57 % of a run's CPU.
    # A batch tests the batch (names, rows, exit code, table, a good claim's row as it is alone),
    # and the claim surface audits every seed in depth; so a batch draws each seed with a weight of
    # 1 / its cost: every seed and verdict still comes in batches, the costly ones about 1 pick in 6
    docs = seeds["claim_docs"]
    weights = [1.0 / max(seeds["claims"].get(s["name"], {}).get("cpu_s") or 0.0, 0.01) for s in docs]
    # one or two good claims: one is enough to check that a batch gives a good claim the verdict it
    # gets alone, two that rows do not mix
    for k in range(rng.randint(1, 2)):
        s = rng.choices(docs, weights)[0]
        p = d / f"good{k}_{s['name']}"
        p.write_text(yaml.safe_dump(s["doc"], sort_keys=False))
        good[str(p)] = seeds["claims"][s["name"]]
    for k in range(rng.randint(0, 4)):
        name = _odd_name(rng, k)
        labels.append(f"{name!r}: " + make_claim(d, rng, {**seeds, "claim_docs": rng.choices(docs, weights)}, name))
    extra = rng.random()
    if extra < 0.1:
        os.symlink("nowhere.yaml", d / "dangling.yaml")
        labels.append("dangling link")
    elif extra < 0.2:
        (d / "sub.yaml").mkdir()
        labels.append("folder named .yaml")
    elif extra < 0.25:
        os.mkfifo(d / "fifo.yaml")
        labels.append("fifo named .yaml")
    elif extra < 0.3:
        os.symlink(".", d / "loop")
        labels.append("link to its own folder")
    target = str(d) if rng.random() < 0.8 else str(d / "*.yaml")
    fmt = rng.choice(["json", "csv", "markdown", "parquet", "table"])
    out = str(case / "out" / f"verdicts.{ 'md' if fmt == 'markdown' else fmt if fmt != 'table' else 'txt'}")
    argv = ["audit", target, "--engine", "local", "-f", fmt, "-o", out]
    return {"kind": "cli", "argv": argv, "label": "; ".join(labels) or "good claims only", "outputs": [out], "out_dir": str(case / "out"),
            "good": good, "table": out if fmt == "json" else None, "target": target, "verdict_table": True}


def gen_pairs(case: Path, rng: random.Random, seeds: dict) -> dict:
    from tests.fuzz import mutators

    rows = [dict(p) for p in seeds["pairs"]]
    rng.shuffle(rows)
    rows = rows[: rng.randint(1, len(rows))]
    labels = []
    for r in rows:
        if rng.random() < 0.3:
            key = rng.choice(["baseline", "candidate"])
            r[key] = rng.choice([str(case / "missing.jsonl"), str(case), "/dev/zero", "/dev/null", "", " ", "s3://", "::", "rel/../../x", "a\x00b",
                                 str(Path(r[key]).parent), "memory://x", "http://[::1"])
            if r[key] == "/dev/zero" and rng.random() < 0.5:
                if not (case / "fifo.jsonl").exists():
                    os.mkfifo(case / "fifo.jsonl")
                r[key] = "fifo.jsonl"
            labels.append(f"{key} -> {r[key]!r:.40}")
    import csv

    buf = io.StringIO()
    quoting = rng.choice([csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC])
    cols = ["name", "baseline", "candidate"] if rng.random() < 0.5 else ["baseline", "candidate"]
    w = csv.writer(buf, quoting=quoting)
    w.writerow(cols)
    for n, r in enumerate(rows):
        w.writerow([f"pair{n}" if c == "name" else r[c] for c in cols])
    data = buf.getvalue().encode("utf-8", "surrogatepass")
    good = [r for r in rows if "speedup_x" in r and r in seeds["pairs"]]
    if rng.random() < 0.6:
        m = mutators.mutate(data, "pairs-csv", rng)
        data = m.data
        labels.append(m.label[:100])
        good = []  # the rows themselves may be damaged: only consistency is checked
    if rng.random() < 0.1:
        data = rng.choice([b"baseline;candidate\nx;y\n", b"\xff\xfeb\x00", b'baseline,candidate\n"unterminated,x\n', b"baseline\nx\n",
                           b"baseline,candidate,baseline\na,b,c\n", b"", b"\n\n\n", b"baseline,candidate\n" + b"a,b\n" * 200_000])
        labels.append(f"replaced by {data[:30]!r}")
        good = []
    (case / "pairs.csv").write_bytes(data)
    fmt = rng.choice(["json", "csv", "markdown", "table"])
    out = str(case / "out" / f"pairs.{'md' if fmt == 'markdown' else fmt if fmt != 'table' else 'txt'}")
    argv = ["compare-pairs", str(case / "pairs.csv"), "-f", fmt, "-o", out]
    ok_exits = [0, 1]
    if rng.random() < 0.3:
        fail_on = rng.choice(["regression", "any-significant", "none", "bogus"])
        argv += ["--fail-on", fail_on, "--max-slowdown", rng.choice(["5%", "0", "-1", "nan", "1e999", "x"])]
        if fail_on in ("regression", "any-significant"):
            ok_exits.append(4)  # the gate's "not comparable" (profaudit.compare.gate.EXIT_NOT_COMPARABLE)
    return {"kind": "cli", "argv": argv, "label": "; ".join(labels) or "good pairs", "outputs": [out], "out_dir": str(case / "out"),
            "pairs_good": good, "table": out if fmt == "json" else None, "verdict_table": True, "ok_exits": ok_exits}


def _plain_file(p: Path) -> bool:
    """A regular file and not a link: the only kind the generator reads or copies. An earlier
    damage may have made a file a link to /dev/zero (or a FIFO), and reading it (a cut, a JSON
    edit, a lie in a manifest or the layout-1 marker) grew the generator itself to 24 GB until the
    kernel killed the whole run (s16 final surfaces runs, seeds 4601 and 4602); copying it filled
    the disk."""
    try:
        return stat.S_ISREG(os.lstat(p).st_mode)
    except OSError:
        return False


def _lie_in_manifest(ds: Path, rng: random.Random) -> str:
    """A layout-2 batch manifest that parses and lies: row and byte counts, table names, profile
    ranges and ids (duplicated within and across batches), paths outside the dataset, replaces
    lists naming itself or nothing, a batch name of another batch."""
    mans = sorted(m for m in (ds / "_manifests").glob("*.json") if _plain_file(m))
    docs = []
    for m in mans:
        try:
            docs.append((m, json.loads(m.read_text())))
        except (ValueError, RecursionError, UnicodeDecodeError):
            pass
    docs = [(m, d) for m, d in docs if isinstance(d, dict) and isinstance(d.get("files"), list) and d["files"]
            and all(isinstance(f, dict) for f in d["files"]) and isinstance(d.get("profiles"), list)]
    if not docs:
        return "no manifest to lie in"
    m, doc = rng.choice(docs)
    f = rng.choice(doc["files"])
    other = rng.choice(docs)[1]
    outside = ds.parent / "outside"
    op = rng.choice(["rows", "rows", "bytes", "table", "range", "path_up", "path_abs", "path_other_batch", "path_link_out", "path_dev",
                     "dup_profile", "dup_profile_other", "profile_rows", "profile_id_odd", "batch_name", "replaces_self", "replaces_other",
                     "replaces_many", "drop_file", "dup_file", "layout", "profiles_empty"])
    if op == "rows":
        f["rows"] = rng.choice([0, 1, f.get("rows", 1) * 2 if isinstance(f.get("rows"), int) else 7, 10**12, 2**63 - 1, 2**63])
    elif op == "bytes":
        f["bytes"] = rng.choice([0, 1, 10**15, 2**63 - 1, 2**64])
    elif op == "table":
        f["table"] = rng.choice(["kernels", "samples", "metadata", "ranges", "nonsense", "", "../samples", "samples/../metadata"])
    elif op == "range":
        f["profile_range"] = rng.choice([[2, 0], [0, 10**9], [-1, 2], [0, 0], [5, 9], "0:2", [0], None, [0.5, 1.5]])
    elif op == "path_up":
        f["path"] = rng.choice(["../outside/part.parquet", "samples/../../outside/part.parquet", "../" * 30 + "etc/passwd", "samples/./../samples/x.parquet"])
        outside.mkdir(exist_ok=True)
        part = next(iter(sorted(p for p in ds.rglob("*.parquet") if _plain_file(p))), None)
        if part is not None:
            shutil.copyfile(part, outside / "part.parquet")  # a readable Parquet file outside the dataset
    elif op == "path_abs":
        part = next(iter(sorted(ds.rglob("*.parquet"))), None)
        f["path"] = rng.choice(["/etc/passwd", "/dev/zero", "/proc/self/mem", str(part.resolve()) if part else "/"])
    elif op == "path_other_batch":
        of = rng.choice(other["files"]) if other.get("files") else {}
        f["path"] = of.get("path", f.get("path")) if isinstance(of, dict) else f.get("path")
    elif op == "path_link_out":
        outside.mkdir(exist_ok=True)
        (outside / "secret.parquet").write_bytes(b"PAR1 not really")
        link = ds / "samples" / "linked.parquet"
        link.parent.mkdir(exist_ok=True)
        if not link.exists():
            os.symlink(outside / "secret.parquet", link)
        f["path"] = "samples/linked.parquet"
    elif op == "path_dev":
        f["path"] = rng.choice(["", ".", "samples", "samples/", "\x00", "a" * 5000, "samples/batch=x/../../_manifests/" + m.name])
    elif op in ("dup_profile", "dup_profile_other"):
        src = other if op == "dup_profile_other" else doc
        pids = [p for p in src.get("profiles", []) if isinstance(p, dict)]
        mine = [p for p in doc["profiles"] if isinstance(p, dict)]
        if pids and mine:
            rng.choice(mine)["profile_id"] = rng.choice(pids).get("profile_id")
    elif op == "profile_rows":
        mine = [p for p in doc["profiles"] if isinstance(p, dict)]
        if mine:
            rng.choice(mine)["rows"] = rng.choice([{"samples": 10**12}, {"samples": -5}, {"kernels": 3}, {}, {"samples": "x"}, [], 5])
    elif op == "profile_id_odd":
        mine = [p for p in doc["profiles"] if isinstance(p, dict)]
        if mine:
            rng.choice(mine)["profile_id"] = rng.choice(["", "../x", "a/b", "x" * 5000, None, 5, "é\ud800", "profile_id=x"])
    elif op == "batch_name":
        doc["batch"] = rng.choice([other.get("batch"), "../x", "", "batch=x", "x" * 3000, None])
    elif op == "replaces_self":
        doc["replaces"] = [doc.get("batch")]
    elif op == "replaces_other":
        doc["replaces"] = [other.get("batch")]
    elif op == "replaces_many":
        doc["replaces"] = rng.choice([[f"b{k}" for k in range(10_000)], ["nonexistent"], "x", [None], [[1]]])
    elif op == "drop_file":
        doc["files"].remove(f)
    elif op == "dup_file":
        doc["files"].append(dict(f))
    elif op == "layout":
        doc["layout"] = rng.choice([1, 3, "2", None, 2.0, -2])
    else:
        doc["profiles"] = []
    m.write_text(json.dumps(doc))
    return f"manifest {m.name[:30]} lies: {op}"


def _copy_keeping_fifos(src: str, dst: str) -> None:
    if stat.S_ISFIFO(os.lstat(src).st_mode):
        os.mkfifo(dst)
    else:
        shutil.copy2(src, dst)


def _lie_in_layout_1(ds: Path, rng: random.Random) -> str:
    """Layout 1 (a folder per profile_id): a folder whose name says another id than its rows, two
    folders with the same rows, the marker listing ids that do not exist or one id twice."""
    dirs = sorted(p for p in ds.glob("*/profile_id=*") if p.is_dir())
    marker = ds / "_profaudit_dataset.json"
    op = rng.choice(["rename", "twin", "marker_missing_id", "marker_dup", "marker_many", "marker_layout"])
    if op in ("rename", "twin") and dirs:
        d = rng.choice(dirs)
        new = d.with_name(rng.choice(["profile_id=other", "profile_id=", "profile_id=" + d.name.split("=", 1)[1] + "x", "profile_id=a%2Fb"]))
        if new.exists():
            return "layout-1 lie skipped"
        if op == "rename":
            d.rename(new)
        else:
            # links copied as links: following one an earlier damage made to /dev/zero copied it
            # for ever (61 GB on a shared disk before the disk was full); a FIFO an earlier damage
            # made is made again, as copying one is shutil's "is a named pipe" error (s18 r4
            # dataset #803, a generator error)
            shutil.copytree(d, new, symlinks=True, copy_function=_copy_keeping_fifos)
        return f"layout 1 lies: {op} {d.name[:30]} -> {new.name[:30]}"
    if not _plain_file(marker):
        return "no layout-1 marker to lie in"
    try:
        doc = json.loads(marker.read_text())
    except (OSError, ValueError, RecursionError, UnicodeDecodeError):
        return "no layout-1 marker to lie in"
    if not isinstance(doc, dict):
        return "no layout-1 marker to lie in"
    ids = doc.get("profiles") if isinstance(doc.get("profiles"), list) else []
    if op == "marker_missing_id":
        doc["profiles"] = ids + ["no-such-profile"]
    elif op == "marker_dup":
        doc["profiles"] = ids + ids[:1]
    elif op == "marker_many":
        doc["profiles"] = [f"p{k}" for k in range(10_000)]
    else:
        doc["layout"] = rng.choice([2, 1, "1", None])
    marker.write_text(json.dumps(doc))
    return f"layout 1 lies: {op}"


def _damage_dataset(ds: Path, rng: random.Random) -> str:
    from tests.fuzz import mutators

    if rng.random() < 0.3:
        # lies that parse: a reader that trusts its manifest reads outside the dataset, counts
        # rows twice or prints counts the data does not have
        return _lie_in_manifest(ds, rng) if (ds / "_manifests").is_dir() else _lie_in_layout_1(ds, rng)
    files = sorted(p for p in ds.rglob("*") if _plain_file(p))
    if not files:
        # earlier damages left only links, FIFOs and folders: nothing this damage may read (an
        # IndexError from rng.choice, a generator error, before; review E17-5)
        return "no regular file left to damage"
    op = rng.random()
    if op < 0.5:
        f = rng.choice(files)
        name = "json" if f.suffix == ".json" else "parquet"
        m = mutators.mutate(f.read_bytes(), name, rng)
        f.write_bytes(m.data)
        return f"{f.relative_to(ds)}: {m.label[:80]}"
    if op < 0.6:
        f = rng.choice(files)
        f.unlink()
        return f"{f.relative_to(ds)} deleted"
    if op < 0.68:
        pq = [f for f in files if f.suffix == ".parquet"]
        if len(pq) >= 2:
            a, b = rng.sample(pq, 2)
            da, db = a.read_bytes(), b.read_bytes()
            a.write_bytes(db)
            b.write_bytes(da)
            return f"{a.relative_to(ds)} <-> {b.relative_to(ds)} swapped"
    if op < 0.76:
        mans = sorted(m for m in (ds / "_manifests").glob("*.json") if _plain_file(m)) if (ds / "_manifests").is_dir() else []
        if mans:
            m = rng.choice(mans)
            dup = m.with_name("b" + m.name)
            shutil.copyfile(m, dup)
            return f"{m.name} copied to {dup.name} (two manifests, same profiles)"
    if op < 0.84:
        f = rng.choice(files)
        f.unlink()
        rng.choice([lambda: f.mkdir(), lambda: os.symlink(f.name, f), lambda: os.symlink("/dev/zero", f), lambda: os.mkfifo(f)])()
        return f"{f.relative_to(ds)} replaced by a folder/link/fifo"
    if op < 0.92:
        f = rng.choice([x for x in files if x.suffix == ".json"] or files)
        doc = None
        try:
            doc = json.loads(f.read_bytes())
        except (ValueError, RecursionError):  # an earlier damage nested it past the interpreter's depth
            pass
        if doc is not None:
            doc, label = mutators.mutate_json_doc(doc, rng)
            data, label = mutators._dumps(doc, label)
            f.write_bytes(data)
            return f"{f.relative_to(ds)}: json {label[:80]}"
    f = rng.choice(files)
    data = f.read_bytes()
    f.write_bytes(data[: rng.randint(0, max(0, len(data) - 1))])
    return f"{f.relative_to(ds)} cut"


def gen_dataset(case: Path, rng: random.Random, seeds: dict) -> dict:
    src = Path(rng.choice(seeds["ds"]))
    ds = case / "ds"
    shutil.copytree(src, ds)
    labels = [f"{src.name}"]
    for _ in range(rng.choice([1, 1, 2])):
        labels.append(_damage_dataset(ds, rng))
    cmd = rng.choice(["info", "info", "kernels", "summary", "gaps", "roofline", "compact", "convert", "ingest", "url"])
    outputs = []
    if cmd == "info":
        argv = ["dataset", "info", str(ds), "-f", rng.choice(["json", "table"])]
    elif cmd == "kernels":
        argv = ["kernels", str(ds), "-f", "json"]
    elif cmd in ("summary", "gaps"):
        argv = [cmd, str(ds)]
    elif cmd == "roofline":
        argv = ["roofline", str(ds), "-f", "json"]
    elif cmd == "compact":
        argv = ["dataset", "compact", str(ds), "--orphan-age-h", rng.choice(["0", "1"])]
    elif cmd == "convert":
        out = str(case / "out" / "converted")
        argv = ["dataset", "convert", str(ds), "-o", out]
    elif cmd == "ingest":
        argv = ["ingest", rng.choice(seeds["files"]), "-o", str(ds)]
    else:
        url = rng.choice(["s3://", "s3:///", "file://" + str(ds), "file:/" + str(ds), "memory://", "memory://ds", "zip://x::" + str(ds), "::", "a::b::c",
                          "http://[::1]:99999/ds", "gs://" + "b" * 300, "s3://bucket/" + "\x00", "ftp://localhost:1/ds", "dask://x", "simplecache::file://" + str(ds)])
        argv = ["dataset", "info", url] if rng.random() < 0.5 else ["kernels", url, "-f", "json"]
        labels.append(f"url {url[:60]!r}")
    return {"kind": "cli", "argv": argv, "label": "; ".join(labels), "outputs": outputs, "out_dir": str(case / "out")}


ABSURD_NUMBERS = (0, -0.0, -1, -1e12, float("inf"), float("-inf"), float("nan"), 1e308, 1.7976931348623157e308, 1e-320, 5e-324, 2**63, 2**64,
                  10**400, "1e309", "1e12", "1_000_000", "0x10", "3.35 TB/s", True, None, [], {}, 1.5)


def _absurd_peak(doc, rng: random.Random) -> str:
    """One number the spec publishes (a peak, a bandwidth, a clock, a size, a count, a conflict
    value) set to an absurd one, the rest left valid: it must be refused or stay out of what is
    printed, never come out as a 300-digit bandwidth or "0 GB/s"."""
    from tests.fuzz import mutators

    if not isinstance(doc, dict):
        return "no spec mapping for an absurd peak"
    leaves = [path for path, _ in mutators._nodes(doc) if path and path[-1] in ("value", "clock_mhz", "capacity_bytes")]
    if not leaves:
        return "no number to make absurd"
    path = rng.choice(leaves)
    val = rng.choice(ABSURD_NUMBERS)
    mutators._set(doc, path, val)
    return f"absurd {'.'.join(map(str, path[-3:]))} = {val!r:.30}"


def gen_spec(case: Path, rng: random.Random, seeds: dict) -> dict:
    import yaml

    from tests.fuzz import mutators

    src = Path(rng.choice(seeds["specs"]))
    doc = yaml.safe_load(src.read_text())
    labels = [src.name]
    for _ in range(rng.choice([1, 1, 2, 3])):
        if rng.random() < 0.35:
            labels.append(_absurd_peak(doc, rng))
        elif rng.random() < 0.6:
            doc, label = mutators.mutate_json_doc(doc, rng)
            labels.append(label.split("\x00", 1)[0])
        else:
            nodes = list(mutators._nodes(doc))
            path, _ = rng.choice(nodes)
            val = rng.choice(ODD_VALUES)
            if path:
                mutators._set(doc, path, val)
            labels.append(f"set {list(path)[-3:]} = {val!r:.30}")
    data = _serialised(doc, rng, labels, 0.2)
    spec = case / "spec.yaml"
    spec.write_bytes(data)
    if rng.random() < 0.05:
        spec.unlink()
        rng.choice([lambda: spec.mkdir(), lambda: os.symlink("spec.yaml", spec), lambda: os.mkfifo(spec)])()
        labels.append("spec replaced by a folder/link/fifo")
    key = doc.get("key") if isinstance(doc, dict) and isinstance(doc.get("key"), str) else src.stem
    argv = rng.choice([["devices", "--spec", str(spec), "-f", "json"], ["devices", key, "--spec", str(spec)], ["devices", "--spec", str(case)]])
    return {"kind": "cli", "argv": argv, "label": "; ".join(labels), "outputs": [], "out_dir": str(case / "out")}


def _data_url(data: bytes, rng: random.Random) -> str:
    url = "data:application/octet-stream;base64," + base64.b64encode(data).decode()
    op = rng.random()
    if op < 0.6:
        return url
    damage = rng.choice(["cut", "flip", "nocomma", "nobase64", "padding", "spaces", "unicode", "empty", "notstr", "huge_claim"])
    if damage == "cut":
        return url[: rng.randint(0, len(url))]
    if damage == "flip":
        k = rng.randrange(len(url))
        return url[:k] + rng.choice("!@#$%^&*~`") + url[k + 1:]
    if damage == "nocomma":
        return url.replace(",", "", 1)
    if damage == "nobase64":
        return url.replace(";base64", "", 1)
    if damage == "padding":
        return url + "===="
    if damage == "spaces":
        return url.replace("A", " A", 3)
    if damage == "unicode":
        return url + "é\ud800"
    if damage == "empty":
        return "data:application/octet-stream;base64,"
    if damage == "notstr":
        return rng.choice([None, 3, ["x"], {"a": 1}])  # type: ignore[return-value]
    return url


def gen_upload(case: Path, rng: random.Random, seeds: dict) -> dict:
    """A damaged upload: contents and names as the dcc.Upload component would send them."""
    import yaml

    from tests.fuzz import mutators

    contents, names, labels = [], [], []
    for k in range(rng.choice([1, 1, 2, 3])):
        kind = rng.choice(["claim", "claim", "log", "zip", "trace", "raw"])
        if kind == "claim":
            sub = case / f"c{k}"
            sub.mkdir()
            labels.append("claim: " + make_claim(sub, rng, seeds))
            data, name = (sub / "claim.yaml").read_bytes(), rng.choice(["claim.yaml", "claim.yml", "run.json"])
        elif kind == "log":
            f = Path(rng.choice(seeds["files"]))
            m = mutators.mutate(f.read_bytes(), "timing-log", rng) if rng.random() < 0.6 else mutators.Mutant(f.read_bytes(), "intact")
            data, name = m.data, f.name
            labels.append(f"log {m.label[:60]}")
        elif kind == "trace":
            f = REPO / "sample_reports" / "torch_cpu" / "matmul_softmax_layernorm.pt.trace.json.gz"
            data, name = f.read_bytes(), f.name
            if rng.random() < 0.5:
                data = mutators.mutate(data, "chrome-trace", rng).data
            labels.append("trace")
        elif kind == "zip":
            buf = io.BytesIO()
            ds = Path(rng.choice(seeds["ds"]))
            with zipfile.ZipFile(buf, "w") as zf:
                for p in sorted(ds.rglob("*")):
                    if p.is_file():
                        zf.write(p, ds.name + "/" + p.relative_to(ds).as_posix())
                op = rng.random()
                if op < 0.15:
                    zf.writestr("../../escape.txt", b"x")
                elif op < 0.3:
                    zf.writestr("/abs/escape.txt", b"x")
                elif op < 0.4:
                    info = zipfile.ZipInfo(ds.name + "/link")
                    info.external_attr = (0o120777 << 16)
                    zf.writestr(info, "/etc/passwd")
                elif op < 0.5:
                    zf.writestr(ds.name + "/bad\x01name", b"x")
            data = buf.getvalue()
            if rng.random() < 0.4:
                data = mutators.mutate(data, "zip", rng).data
            name = rng.choice(["ds.zip", "x.zip", ".zip", "../../ds.zip"])
            labels.append(f"zip {name}")
        else:
            data, name = os.urandom(rng.randint(0, 4096)), "x.bin"
            labels.append("random bytes")
        if rng.random() < 0.35:
            name = rng.choice(["../../etc/passwd", "..", ".", "/etc/passwd", "a/../../b.yaml", "claim.yaml\x00.png", "x\n.yaml", "a" * 5000 + ".yaml",
                               "CON", "\\..\\..\\x.yaml", "", " ", "\u202egnp.yaml", "é" * 300, ".hidden.yaml", "~/x.yaml", "x.yaml/", None, 5])
            labels.append(f"name {name!r:.40}")
        contents.append(_data_url(data, rng))
        names.append(name)
    if rng.random() < 0.05:
        names = names[:-1] or "one.yaml"
        labels.append("fewer names than files")
    payload = case / "upload.json"
    payload.write_text(json.dumps({"contents": contents, "filenames": names}))
    return {"kind": "upload", "payload": str(payload), "label": "; ".join(labels), "up": str(case / "srv" / "uploads"), "outputs": []}


GENERATORS = {"claim": gen_claim, "batch": gen_batch, "pairs": gen_pairs, "dataset": gen_dataset, "spec": gen_spec, "upload": gen_upload}


# ------------------------------------------------------------------------------------------------
# judging (in the child)
# ------------------------------------------------------------------------------------------------
def _run_cli(argv: list[str]) -> tuple[int, str, str]:
    from profaudit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


# a figure profaudit computed and printed as not-a-number: "nan×", "inf%", "-inf x" (a claim's own
# text may say "nan" or "inf"; followed by the unit of a ratio or a share it is a computed figure)
_NONSENSE_FIGURE = None


def _nonsense_figure(case: dict, stdout: str) -> str:
    import re

    global _NONSENSE_FIGURE
    if _NONSENSE_FIGURE is None:
        _NONSENSE_FIGURE = re.compile(r"(?<![\w.])[-+]?(?:nan|inf|infinity)\s?(?:%|×|x\b)", re.I)
    texts = [("stdout", stdout)]
    for o in case.get("outputs") or []:
        if o and Path(o).is_file() and Path(o).suffix in (".txt", ".md", ".html", ".text", ".csv"):
            texts.append((Path(o).name, Path(o).read_text(encoding="utf-8", errors="replace")))
    for where, text in texts:
        m = _NONSENSE_FIGURE.search(text)
        if m:
            return f"a computed figure printed as {m.group(0)!r} in {where}: ...{text[max(0, m.start() - 80):m.end() + 40]!r}"
    return ""


def _json_output(case: dict, stdout: str) -> str:
    """A JSON output must be JSON: NaN and Infinity are Python's extension, which other readers
    (jq, JavaScript, Go) refuse; a number that is not finite is a nonsense figure anyway."""
    argv = case.get("argv", [])
    fmt = next((argv[k + 1] for k, a in enumerate(argv[:-1]) if a in ("-f", "--format")), None)
    if fmt != "json":
        return ""
    out = next((argv[k + 1] for k, a in enumerate(argv[:-1]) if a in ("-o", "--output")), None)
    if out is None:
        text, where = stdout, "stdout"
    elif Path(out).is_file():
        text, where = Path(out).read_text(encoding="utf-8", errors="replace"), Path(out).name
    else:
        return ""
    try:
        json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        return f"-f json wrote what is not JSON to {where}: {str(exc)[:200]}"
    return ""


def _cli_verdict(rc: int, err: str, ok_exits: tuple[int, ...] = (0, 1)) -> tuple[str, str]:
    lines = [line for line in err.splitlines() if line.strip()]
    if "Traceback" in err:
        return "undeliberate", "traceback: " + (lines[-1] if lines else "")[:300]
    if rc == 3 or any("internal error" in line for line in lines):
        return "undeliberate", next((line for line in lines if "internal error" in line), f"exit {rc}")[:400]
    if rc == 2:
        errors = [line for line in lines if line.startswith("profaudit: error: ")]
        if len(errors) != 1:
            return "undeliberate", f"exit 2 with {len(errors)} error lines: {' | '.join(lines)[:300]}"
        return "deliberate", errors[0][:400]
    if rc in ok_exits:
        return "ok", ""
    return "undeliberate", f"exit {rc}: {' | '.join(lines)[:300]}"


def _stray_files(case: dict, rc: int, v: str) -> str:
    """A half-written output: a temporary left in the output folder, or an output file written
    although the command failed (or missing although it succeeded)."""
    out_dir = Path(case["out_dir"])
    if out_dir.is_dir():
        for p in out_dir.rglob("*"):
            if p.name.endswith(".tmp") or p.name.startswith("."):
                return f"left over: {p.relative_to(out_dir)}"
    for o in case.get("outputs", []):
        # a verdict table is written with exit 2 when a row is ERROR; never with an error line
        if rc == 2 and Path(o).exists() and (v == "deliberate" or not case.get("verdict_table")):
            return f"exit 2 but {Path(o).name} was written"
        if rc in case.get("ok_exits", (0, 1)) and not Path(o).exists():
            return f"exit {rc} but {Path(o).name} was not written"
    return ""


def _same(a, b) -> bool:
    """Two table numbers agree: both absent, or equal to rounding (JSON keeps 17 digits)."""
    return (a is None) == (b is None) and (a is None or abs(a - b) <= 1e-9 * max(1.0, abs(b)))


def _check_batch(case: dict, rc: int) -> str:
    if not case.get("table"):
        return ""
    rows = json.loads(Path(case["table"]).read_text())
    by_claim = {r["claim"]: r for r in rows}
    for path, want in case["good"].items():
        got = by_claim.get(path)
        if got is None:
            return f"good claim {Path(path).name} has no row"
        if got["verdict"] != want["verdict"]:
            return f"good claim {Path(path).name}: {got['verdict']} in the batch, {want['verdict']} alone"
        a, b = got.get("supported_speedup_x"), want.get("supported_speedup_x")
        if not _same(a, b):
            return f"good claim {Path(path).name}: supported speedup {a} in the batch, {b} alone"
    worst = max((AUDIT_EXIT.get(r["verdict"], 9) for r in rows), default=0)
    if worst != rc:
        return f"exit {rc} but the worst row says {worst}"
    for r in rows:
        if r["verdict"] == "ERROR" and (not r.get("error") or "\n" in r["error"] or "internal error" in r["error"]):
            return f"ERROR row without one clear line: {r.get('error')!r:.200}"
    return ""


def _check_pairs(case: dict, rc: int) -> str:
    if not case.get("table"):
        return ""
    rows = json.loads(Path(case["table"]).read_text())
    if any(r.get("error") for r in rows) and rc != 2:
        return f"exit {rc} with an unreadable pair"
    for g in case.get("pairs_good", []):
        hit = [r for r in rows if r["baseline"] == g["baseline"] and r["candidate"] == g["candidate"]]
        if not hit:
            return f"good pair {Path(g['baseline']).name} has no row"
        for r in hit:
            a, b = r.get("speedup_x"), g.get("speedup_x")
            if r.get("verdict") != g.get("verdict") or not _same(a, b):
                return f"good pair {Path(g['baseline']).name}: {r.get('verdict')} {a} in the batch, {g.get('verdict')} {b} alone"
    return ""


def _upload_verdict(case: dict) -> tuple[str, str]:
    from profaudit.dashboards.state import DashboardState
    from profaudit.dashboards.uploads import store_uploads
    from profaudit.errors import ProfauditError

    payload = json.loads(Path(case["payload"]).read_text())
    up = Path(case["up"])
    up.mkdir(parents=True)
    before = set(Path(case["payload"]).parent.iterdir())
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        st = DashboardState(upload_dir=up)
        results = store_uploads(st, payload["contents"], payload["filenames"])
        audits = []
        for cid in list(st.claims):
            try:
                st.audit(cid, None, None)
                audits.append("ok")
            except ProfauditError as exc:
                audits.append(str(exc))
    texts = [r.text for r in results] + audits
    for t in texts:
        if "cannot load: " in t and any(w in t for w in ("Error:", "Exception:")):
            return "undeliberate", f"catch-all message: {t[:300]}"
        if str(up) in t or str(up.resolve()) in t or str(up.parent) in t:
            return "undeliberate", f"server path shown: {t[:300]}"
        if "\n" in t:
            return "undeliberate", f"message of several lines: {t[:300]}"
    after = set(Path(case["payload"]).parent.iterdir())
    if after - before - {up.parent}:
        return "undeliberate", f"written outside the upload folder: {sorted(p.name for p in after - before)}"
    for p in up.rglob("*"):
        if p.name.startswith(".staging-"):
            return "undeliberate", f"staging folder left: {p.name}"
        if any(ch in p.name for ch in "\x00\n\r") or not p.resolve().is_relative_to(up.resolve()) and not p.is_symlink():
            return "undeliberate", f"stored under a bad name: {p.name!r}"
    if any(r.ok for r in results):
        return "ok", ""
    return "deliberate", " | ".join(texts)[:400]


def judge(case: dict) -> tuple[str, str]:
    if case["kind"] == "upload":
        return _upload_verdict(case)
    rc, stdout, err = _run_cli(case["argv"])
    v, detail = _cli_verdict(rc, err, tuple(case.get("ok_exits", (0, 1))))
    if case.get("verdict_table") and rc == 2 and v == "undeliberate" and detail.startswith("exit 2 with 0 error lines"):
        # a batch whose worst row is ERROR (an unreadable claim or pair) exits 2 by design, its
        # table written, each bad input named in its row: judged by the table below
        v, detail = "ok", ""
    if v in ("ok", "deliberate"):
        problem = _stray_files(case, rc, v)
        if not problem and v == "ok":
            problem = _check_batch(case, rc) if "good" in case else _check_pairs(case, rc) if "pairs_good" in case else ""
        if not problem and v == "ok":
            problem = _json_output(case, stdout) or _nonsense_figure(case, stdout)
        if problem:
            return "undeliberate", problem
    return v, detail


# ------------------------------------------------------------------------------------------------
# the child and the parent
# ------------------------------------------------------------------------------------------------
def _child(case: dict, result: Path, mem_cap_mb: int) -> None:
    # the parent's stop handlers (see run) are not the input's: a child told to stop dies as ever.
    # SIGINT is ignored, not defaulted: a terminal's ^C goes to the whole process group, and the
    # parent stops by finishing what runs, so an input killed by it was judged a crash (review F18-10)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with open("/proc/self/statm") as fh:
            vsz = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        # a hard cap far over the verdict line: a blow-up fails an allocation, not the machine
        resource.setrlimit(resource.RLIMIT_AS, (vsz + (mem_cap_mb << 20), resource.RLIM_INFINITY))
    except (OSError, ValueError):
        pass
    with contextlib.suppress(OSError, ValueError):
        # a file written past FILE_CAP_MB kills the input with SIGXFSZ (judged a blow-up) before
        # it fills the disk the whole machine shares (a copy of /dev/zero wrote 61 GB). Python
        # ignores SIGXFSZ, which would make the write an OSError profaudit words as "cannot
        # write": a refusal, and the blow-up unseen
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_CAP_MB << 20, FILE_CAP_MB << 20))
    try:
        # the peak RSS the parent reads at wait4 starts from here, not from the parent's own peak
        # (a forked child inherits the parent's high-water mark)
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    before = set(sys.modules) if case.get("report_modules") else None
    try:
        v, detail = judge(case)
    except MemoryError:
        v, detail = "memory", "MemoryError"
    except BaseException as exc:  # the judging itself failed: that is the finding, with its type
        import traceback

        v, detail = "undeliberate", f"{type(exc).__name__}: {str(exc)[:200]} at {traceback.format_exc().splitlines()[-3].strip()[:150]}"
    if before is not None:
        with contextlib.suppress(OSError):
            Path(case["report_modules"]).write_text(json.dumps(sorted(set(sys.modules) - before)))
    result.write_text(json.dumps({"verdict": v, "detail": detail}))
    os._exit(0)


def _cpu_s(pid: int) -> tuple[float, bool]:
    """CPU seconds of the child and its children, and whether it is runnable now."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK"), fields[0] == "R"
    except (OSError, ValueError, IndexError):
        return 0.0, False


class Running:
    def __init__(self, surface: str, i: int, case_dir: Path, case: dict, mem_cap_mb: int):
        self.surface, self.i, self.dir, self.case = surface, i, case_dir, case
        self.result = case_dir / "result.json"
        self.t0 = self.last_progress = time.monotonic()
        self.last_cpu = 0.0
        self.cpu = 0.0  # CPU seconds of the child and what it waited for, known at its end
        self.pid = os.fork()
        if self.pid == 0:
            _child(case, self.result, mem_cap_mb)

    def poll(self, cpu_limit: float, stall_s: float, mem_mb: int) -> tuple[str, str] | None:
        pid, status, ru = os.wait4(self.pid, os.WNOHANG)
        if pid == 0:
            cpu, runnable = _cpu_s(self.pid)
            now = time.monotonic()
            # under nice 19 on a busy machine a runnable child can wait seconds for a core: that
            # is not a hang, only sleeping without progress is (a FIFO, a device, a lock)
            if cpu > self.last_cpu + 0.01 or runnable:
                self.last_cpu, self.last_progress = max(cpu, self.last_cpu), now
            if cpu > cpu_limit or now - self.last_progress > stall_s:
                os.kill(self.pid, signal.SIGKILL)
                _, _, ru = os.wait4(self.pid, 0)
                self.cpu = ru.ru_utime + ru.ru_stime
                why = f"{cpu:.1f} CPU-s" if cpu > cpu_limit else f"no CPU progress for {now - self.last_progress:.0f} s (blocked)"
                return "timeout", why
            return None
        peak_mb = ru.ru_maxrss / 1024
        self.cpu = ru.ru_utime + ru.ru_stime
        if os.WIFSIGNALED(status):
            if os.WTERMSIG(status) == signal.SIGXFSZ:
                return "memory", f"wrote a file past {FILE_CAP_MB} MB (disk blow-up, SIGXFSZ)"
            return "crash", f"signal {os.WTERMSIG(status)}"
        try:
            res = json.loads(self.result.read_text())
        except (OSError, ValueError):
            return "crash", f"no result (exit status {os.WEXITSTATUS(status) if os.WIFEXITED(status) else status})"
        if peak_mb > mem_mb:
            return "memory", f"peak RSS {peak_mb:.0f} MB ({res['verdict']}: {res['detail'][:200]})"
        return res["verdict"], res["detail"]


def _preimport(modules=()) -> None:
    """What every child needs, imported once here (no polars work is run: see the docstring);
    `modules`: what the seed-building child imported."""
    import importlib

    for m in modules:
        try:
            importlib.import_module(m)
        except (Exception, SystemExit):  # an optional part that does not import here: the child will say so
            pass
    import polars  # noqa: F401
    import yaml  # noqa: F401

    import profaudit.audit  # noqa: F401
    import profaudit.batch  # noqa: F401
    import profaudit.cli  # noqa: F401
    import profaudit.dataset  # noqa: F401
    import profaudit.loader  # noqa: F401
    from tests.fuzz import mutators  # noqa: F401

    try:
        import profaudit.dashboards.state  # noqa: F401
        import profaudit.dashboards.uploads  # noqa: F401
    except ImportError:  # no dash: the upload surface is skipped
        pass
    _warm()


def _warm() -> None:
    """Work every input would repeat, done once here so each forked child inherits it: the shipped
    device specs (an audit matches a device; ~1 s each time before libyaml read them, still ~0.1 s)
    and the click command typer builds from the app on every `main()` call (~0.06-0.1 s). Neither
    touches polars. The command is the same object a fresh build gives (typer builds it from the
    app's declarations alone), and each child gets its own copy of it, so no input sees another's."""
    import typer.main

    from profaudit.cli import app
    from profaudit.specs import _package_specs

    _package_specs()
    built = typer.main.get_command(app)
    build = typer.main.get_command

    def get_command(obj):
        return built if obj is app else build(obj)

    typer.main.get_command = get_command


def _child_modules(surfaces, seeds: dict, seeds_dir: Path, work: Path, cpu_s: float, stall_s: float, mem_mb: int) -> list[str]:
    """What the inputs import beyond the parent: a few warm-up inputs per surface (their own seeds,
    not counted) run in forked children that report the modules they imported, and the parent
    imports those once. Without this every child imported them again: pandas, rich's renderers,
    pydantic's lazy parts, pyarrow.dataset ... (~40 ms of a 60 ms spec input). Kept in
    child_modules.json beside the seeds, so a reused seeds folder skips it."""
    cache = Path(seeds_dir) / "child_modules.json"
    if cache.exists():
        return json.loads(cache.read_text())
    found: set[str] = set()
    for s in surfaces:
        for j in range(4):
            case_dir = work / f"warm_{s}_{j}"
            case_dir.mkdir()
            (case_dir / "out").mkdir()
            try:
                case = GENERATORS[s](case_dir, random.Random(f"warm-up/{s}/{j}"), seeds)
            except Exception:  # a generator error is counted in the run itself
                continue
            case["report_modules"] = str(case_dir / "modules.json")
            r = Running(s, -1, case_dir, case, mem_mb * 3)
            while r.poll(cpu_s, stall_s, mem_mb) is None:
                time.sleep(0.01)
            with contextlib.suppress(OSError, ValueError):
                found.update(json.loads((case_dir / "modules.json").read_text()))
            shutil.rmtree(case_dir, ignore_errors=True)
    # only importable top-level-named modules; private C parts come with their packages
    mods = sorted(m for m in found if not m.startswith(("__main__", "__mp_main__")))
    cache.write_text(json.dumps(mods))
    return mods


def run(surfaces, per_surface: int, out: Path, *, seed: int = 0, workers: int = 1, cpu_s: float = 30.0, stall_s: float = 20.0,
        mem_mb: int = 2048, keep_ok: bool = False, quiet: bool = False, seeds: dict | None = None,
        seeds_dir: Path | None = None, budget_s: float = 0.0, report_s: float = 0.0) -> dict[str, Counter]:
    """Fuzz `surfaces`, `per_surface` inputs each; returns verdict counts per surface and keeps
    reproducers under out/repro. `seeds`: what `setup` returned, reused (built when None, in
    `seeds_dir`, default out/seeds).

    Call it in a process that has run nothing in polars: each input runs in a forked child, and a
    child forked after polars' thread pool started hangs in its first parallel operation (the
    tests run this script as a subprocess for that reason)."""
    out.mkdir(parents=True, exist_ok=True)
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    if seeds is None:
        seeds = setup(seeds_dir or out / "seeds")
    _preimport(seeds.get("modules", ()))
    _preimport(_child_modules(surfaces, seeds, seeds_dir or out / "seeds", work, cpu_s, stall_s, mem_mb))
    if "upload" in surfaces:
        try:
            import dash  # noqa: F401
        except ImportError:
            surfaces = [s for s in surfaces if s != "upload"]
    # what the parent imported (~200,000 objects) out of the collector's sight: a child's first
    # full collection otherwise walks all of them, and writes to each page it walks (copy on
    # write), ~0.18 CPU-s of a 0.05-0.7 CPU-s input. The child's own objects are collected as
    # ever; the parent's modules stay alive in it either way
    import gc

    gc.freeze()
    counts = {s: Counter() for s in surfaces}
    cpu = Counter()  # CPU seconds the inputs' children used, per surface
    examples: dict[tuple[str, str], list[str]] = {}
    tasks = [(s, i) for i in range(per_surface) for s in surfaces]
    running: list[Running] = []
    findings = out / "findings.jsonl"
    stop = []

    def _stop(signum, frame):
        # a deadline (SIGTERM, or ^C): start nothing more, finish what runs and print the table, so
        # a run stopped at a fixed hour still gives whole counts instead of the last periodic table
        stop.append(signum)

    old_handlers = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    t_start = last_report = time.monotonic()
    while tasks or running:
        if stop and tasks:
            if not quiet:
                print(f"-- stopped by signal {stop[0]} after {time.monotonic() - t_start:.0f} s: {len(running)} inputs running are finished, no more started",
                      file=sys.stderr, flush=True)
            tasks = []
        if report_s and not quiet and time.monotonic() - last_report > report_s:
            # the table so far: a long run cut short (the machine, a deadline) still says what it saw
            last_report = time.monotonic()
            print(f"-- after {last_report - t_start:.0f} s:", flush=True)
            print_table(counts, last_report - t_start, examples, cpu)
            sys.stdout.flush()
        if budget_s and time.monotonic() - t_start > budget_s:
            tasks = []  # out of time: finish what runs, start nothing (surfaces stay interleaved)
        while tasks and len(running) < workers:
            s, i = tasks.pop(0)
            case_dir = work / f"{s}_{i}"
            case_dir.mkdir()
            (case_dir / "out").mkdir()
            rng = random.Random(f"{seed}/{s}/{i}")
            try:
                case = GENERATORS[s](case_dir, rng, seeds)
            except Exception as exc:  # a generator bug must not end a long run: counted apart
                counts[s]["generator_error"] += 1
                examples.setdefault((s, "generator_error"), []).append(f"{type(exc).__name__}: {exc}"[:200])
                shutil.rmtree(case_dir, ignore_errors=True)
                continue
            (case_dir / "case.json").write_text(json.dumps(case, default=str))
            running.append(Running(s, i, case_dir, case, mem_mb * 3))
        time.sleep(0.005)
        for r in list(running):
            got = r.poll(cpu_s, stall_s, mem_mb)
            if got is None:
                continue
            running.remove(r)
            v, detail = got
            counts[r.surface][v] += 1
            cpu[r.surface] += r.cpu
            if v not in ("ok", "deliberate"):
                examples.setdefault((r.surface, v), []).append(f"#{r.i} {detail[:160]} [{r.case['label'][:160]}]")
                dest = out / "repro" / f"{r.surface}_{r.i}"
                shutil.rmtree(dest, ignore_errors=True)
                dest.parent.mkdir(exist_ok=True)
                os.rename(r.dir, dest)
                with findings.open("a") as fh:
                    fh.write(json.dumps({"surface": r.surface, "i": r.i, "verdict": v, "detail": detail, "label": r.case["label"], "repro": str(dest)}) + "\n")
            elif not keep_ok:
                shutil.rmtree(r.dir, ignore_errors=True)
            done = sum(sum(c.values()) for c in counts.values())
            if not quiet and done % 200 == 0:
                print(f"[{time.monotonic() - t_start:.0f} s] {done} inputs", file=sys.stderr, flush=True)
    for sig, handler in old_handlers.items():
        signal.signal(sig, handler)
    if not quiet:
        print_table(counts, time.monotonic() - t_start, examples, cpu)
    return counts


def print_table(counts: dict[str, Counter], elapsed: float, examples: dict, cpu: Counter | None = None) -> None:
    cols = (*VERDICTS, "generator_error")
    cpu = cpu or Counter()
    print(f"{'surface':<10} {'inputs':>7} " + " ".join(f"{c:>13}" for c in cols) + f" {'CPU-s/input':>12}")
    total = Counter()

    def per_input(n: int, secs: float) -> str:
        return f"{secs / n:>12.3f}" if n else f"{'-':>12}"

    for s, c in counts.items():
        total.update(c)
        print(f"{s:<10} {sum(c.values()):>7} " + " ".join(f"{c[v]:>13}" for v in cols) + " " + per_input(sum(c.values()), cpu[s]))
    n = sum(total.values())
    print(f"{'all':<10} {n:>7} " + " ".join(f"{total[v]:>13}" for v in cols) + " " + per_input(n, sum(cpu.values())))
    print(f"{elapsed:.0f} s wall, {n / elapsed if elapsed else 0:.2f} inputs/s, {sum(cpu.values()):.0f} CPU-s in the inputs' children")
    for (s, v), ex in sorted(examples.items()):
        print(f"-- {s} {v} ({len(ex)}):")
        for line in ex[:8]:
            print("   " + line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-surface", type=int, default=200)
    ap.add_argument("--surfaces", default=",".join(SURFACES), help="comma-separated: " + ", ".join(SURFACES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--cpu-s", type=float, default=30.0, help="CPU seconds before an input is a timeout")
    ap.add_argument("--stall-s", type=float, default=20.0, help="seconds without CPU progress before an input is a timeout (blocked)")
    ap.add_argument("--mem-mb", type=int, default=2048, help="peak RSS over which an input is a memory blow-up")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds-dir", type=Path, help="where the seeds are built, or reused when an earlier run built them there (default OUT/seeds)")
    ap.add_argument("--budget-s", type=float, default=0.0, help="start no new input after this many seconds (0: no limit)")
    ap.add_argument("--report-s", type=float, default=0.0, help="also print the table every this many seconds (0: only at the end)")
    ap.add_argument("--summary-json", type=Path, help="also write the counts per surface and verdict here")
    ap.add_argument("--preload", type=Path, help=argparse.SUPPRESS)  # the tool's tests: a file run here first plants a fault
    args = ap.parse_args(argv)
    if args.preload:
        exec(compile(args.preload.read_text(), str(args.preload), "exec"), {"__name__": "__preload__"})
    surfaces = [s.strip() for s in args.surfaces.split(",") if s.strip()]
    bad = [s for s in surfaces if s not in SURFACES]
    if bad:
        ap.error(f"unknown surface {bad[0]!r} (choose from {', '.join(SURFACES)})")
    counts = run(surfaces, args.per_surface, args.out, seed=args.seed, workers=args.workers, cpu_s=args.cpu_s, stall_s=args.stall_s, mem_mb=args.mem_mb,
                 seeds_dir=args.seeds_dir, budget_s=args.budget_s, report_s=args.report_s)
    if args.summary_json:
        args.summary_json.write_text(json.dumps({s: dict(c) for s, c in counts.items()}))
    bad_total = sum(c[v] for c in counts.values() for v in ("undeliberate", "crash", "timeout", "memory"))
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main())
