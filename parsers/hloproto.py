"""Just enough of XLA's `HloProto` (xla/service/hlo.proto) to name what each HLO instruction is.

The `/host:metadata` plane of a JAX/XLA XSpace carries one serialized HloProto per program ("Hlo
Proto" stat). GPU kernel events name their HLO instruction (`hlo_op`) but not its opcode or
category; the module proto says it. Field numbers used:

    HloProto             hlo_module=1
    HloModuleProto       name=1 computations=3 id=5
    HloComputationProto  name=1 instructions=2
    HloInstructionProto  name=1 opcode=2 metadata=7 fusion_kind=11 custom_call_target=28
    OpMetadata           op_type=1 op_name=2 source_file=3 source_line=4
"""

from __future__ import annotations

from dataclasses import dataclass

from profaudit.parsers.protowire import iter_fields, text


@dataclass(frozen=True)
class HloInstruction:
    name: str
    opcode: str
    fusion_kind: str = ""
    custom_call_target: str = ""
    op_name: str = ""  # framework name stack, e.g. "jit(f)/dot_general"
    source: str = ""  # "file:line"

    @property
    def category(self) -> str:
        """A category in the spirit of xprof's: the opcode, fusions named by their kind."""
        if self.opcode == "fusion" and self.fusion_kind:
            kind = self.fusion_kind[1:] if self.fusion_kind.startswith("k") else self.fusion_kind
            return f"{kind.lower()} fusion"
        return self.opcode


@dataclass
class HloModule:
    name: str
    id: int
    instructions: dict  # name -> HloInstruction


def _instruction(buf: bytes, s: int, e: int) -> HloInstruction:
    name = opcode = fusion_kind = target = op_name = ""
    src_file, src_line = "", 0
    for f, wt, v in iter_fields(buf, s, e):
        if wt != 2:
            continue
        if f == 1:
            name = text(buf, v)
        elif f == 2:
            opcode = text(buf, v)
        elif f == 11:
            fusion_kind = text(buf, v)
        elif f == 28:
            target = text(buf, v)
        elif f == 7:
            for f2, wt2, v2 in iter_fields(buf, *v):
                if f2 == 2 and wt2 == 2:
                    op_name = text(buf, v2)
                elif f2 == 3 and wt2 == 2:
                    src_file = text(buf, v2)
                elif f2 == 4 and wt2 == 0:
                    src_line = v2
    source = f"{src_file}:{src_line}" if src_file else ""
    return HloInstruction(name, opcode, fusion_kind, target, op_name, source)


def decode_hlo_proto(buf: bytes) -> HloModule:
    """Decode a serialized HloProto (or a bare HloModuleProto). Raises WireError when damaged."""
    module_span = None
    for f, wt, v in iter_fields(buf):
        if f == 1 and wt == 2:
            module_span = v
            break
    # An HloModuleProto also starts with field 1 (its name, a string): tell them apart by whether
    # the span parses as a module with computations.
    name, mid, instrs = "", 0, {}
    spans = [module_span] if module_span else []
    for span in spans:
        try:
            fields = list(iter_fields(buf, *span))
        except ValueError:
            fields = []
        if not any(f == 3 and wt == 2 for f, wt, _ in fields):
            fields = list(iter_fields(buf))
        for f, wt, v in fields:
            if f == 1 and wt == 2:
                name = text(buf, v)
            elif f == 5 and wt == 0:
                mid = v
            elif f == 3 and wt == 2:
                for f2, wt2, v2 in iter_fields(buf, *v):
                    if f2 == 2 and wt2 == 2:
                        ins = _instruction(buf, *v2)
                        instrs[ins.name] = ins
    return HloModule(name, mid, instrs)
