"""Session 24: `nf3_hybrid bench` with the decode blocks' shifts as shifts in every block
("alu", the code before this session), as multiplies in every block ("fma", call 3) or in
the blocks ptx_decode.SHIFTS_ON_FMA names ("gemv": the decode GEMV's, the new default), so
that they can be timed on one host in alternating processes.
Usage: PYTHONPATH=$PWD/overlay python3 bench/results/s24_runs/shifts_ab.py alu|fma|gemv BENCH-ARGS...
The blocks are swapped before any kernel module imports them (they copy the strings at import).
It needs ptx_decode.render, which is in commit eb16584 only (calls 3 and 4 ran that commit's
tree); the next commit took the change out again (measured within noise or slower)."""
import sys

from nf3_hybrid.kernels import ptx_decode

mode, args = sys.argv[1], sys.argv[2:]
choice = {"alu": False, "fma": True, "gemv": ptx_decode.SHIFTS_ON_FMA}
if mode not in choice:
    raise SystemExit(f"mode {mode!r}: one of {sorted(choice)}")
vars(ptx_decode).update(ptx_decode.render(choice[mode]))

from nf3_hybrid.cli import main  # noqa: E402  (after the swap, on purpose)
from nf3_hybrid.kernels import expert_gemv, mma_gluon  # noqa: E402

assert (expert_gemv.NF3_UNIT_DOT_ASM == ptx_decode.NF3_UNIT_DOT_ASM
        and mma_gluon._NF3_ASM.value == ptx_decode.NF3_SCALED_ASM), "a kernel module kept the other blocks"
moved = [n for n in ptx_decode.BLOCKS if "mul.hi" in getattr(ptx_decode, n)]
print(f"shifts: {mode} (as multiplies in {moved or 'no block'})", flush=True)
sys.exit(main(["bench"] + args))
