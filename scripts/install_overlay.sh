#!/usr/bin/env bash
# Drop-in install of the nf3-hybrid overlay into an existing Python environment that
# has vLLM: copies the package and its .pth into that environment's site-packages
# (every Python process there — vLLM's TP workers included — then arms the hook),
# adds the `nf3-hybrid` command, and installs the pinned extras.
#
#   scripts/install_overlay.sh [--python PY] [--no-extras] [--profile P] [--dry-run] [--force]
#                              [--uninstall] [--check]
#
#   --python PY   interpreter of the target environment (default: $VIRTUAL_ENV/bin/python,
#                 else python3 on PATH)
#   --no-extras   do not pip-install b12x / fastsafetensors
#   --profile P   extras profile: "default" (b12x 1.5.1) or "b12x-nf3" — opt-in, for
#                 HYBRID_KEPT=b12x_nf3 on SM120/121: b12x 1.1.0 and nvidia-cutlass-dsl
#                 4.6.0 in place of the pinned b12x 1.5.1 and vLLM's cutlass-dsl 4.8.0
#                 (a version conflict; the script says what it means before installing)
#   --dry-run     print the extras' pip commands instead of running them
#   --force       install even if vLLM is missing or not the supported version
#   --uninstall   remove the package, the .pth and the command (idempotent)
#   --check       after installing, verify the hook in a fresh interpreter and a
#                 spawned child process
#
# Versions come from overlay/nf3_hybrid/versions.py (the one place they are pinned).
# The Docker image runs this same script. Re-running it replaces the installed copy.
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}
PY=${PY:-python3}
EXTRAS=1 FORCE=0 UNINSTALL=0 CHECK=0 PROFILE=default DRY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --python) PY=$2; shift 2;;
    --no-extras) EXTRAS=0; shift;;
    --profile) PROFILE=$2; shift 2;;
    --dry-run) DRY=1; shift;;
    --force) FORCE=1; shift;;
    --uninstall) UNINSTALL=1; shift;;
    --check) CHECK=1; shift;;
    -h|--help) sed -n '2,26p' "$0"; exit 0;;
    *) echo "install_overlay: unknown option $1" >&2; exit 2;;
  esac
done

case "$PROFILE" in
  default|b12x-nf3) ;;
  *) echo "install_overlay: unknown profile '$PROFILE' (profiles: default, b12x-nf3)" >&2; exit 2;;
esac
command -v "$PY" >/dev/null 2>&1 || { echo "install_overlay: no Python interpreter '$PY'" >&2; exit 2; }
# HYBRID_DISABLE: the target's own (possibly broken) overlay must not run while we inspect it
SITE=$(HYBRID_DISABLE=1 "$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
BIN=$(HYBRID_DISABLE=1 "$PY" -c 'import sysconfig; print(sysconfig.get_paths()["scripts"])')
ver() { "$PY" -c "import runpy; print(runpy.run_path('$HERE/overlay/nf3_hybrid/versions.py')['$1'])"; }
vers() { "$PY" -c "import runpy; print(' '.join(runpy.run_path('$HERE/overlay/nf3_hybrid/versions.py')['$1']))"; }

remove() {
  rm -rf "$SITE/nf3_hybrid" "$SITE/nf3_hybrid.pth" "$BIN/nf3-hybrid"
  # a copy installed by pip (make install) too, so exactly one copy is ever active
  rm -rf "$SITE"/nf3_hybrid-*.dist-info
}

if [ "$UNINSTALL" = 1 ]; then
  remove
  echo "nf3-hybrid: removed from $SITE"
  exit 0
fi

WANT=$(ver VLLM)
HAVE=$(HYBRID_DISABLE=1 "$PY" -c 'import importlib.metadata as m; print(m.version("vllm"))' 2>/dev/null || echo none)
if [ "$HAVE" != "$WANT" ] && [ "$FORCE" != 1 ]; then
  echo "nf3-hybrid: this environment has vLLM $HAVE, the overlay supports vLLM $WANT." >&2
  echo "            Install vllm==$WANT first, or pass --force to install anyway" >&2
  echo "            (the hook then refuses to patch unless HYBRID_ALLOW_UNTESTED_VLLM=1)." >&2
  exit 3
fi

remove
cp -r "$HERE/overlay/nf3_hybrid" "$SITE/nf3_hybrid"
find "$SITE/nf3_hybrid" -name __pycache__ -prune -exec rm -rf {} +
cp "$HERE/overlay/nf3_hybrid.pth" "$SITE/nf3_hybrid.pth"
mkdir -p "$BIN"
cat > "$BIN/nf3-hybrid" <<EOF
#!$PY
import sys
from nf3_hybrid.cli import main
if __name__ == "__main__":  # spawned children (doctor's hook check) re-import this file
    sys.exit(main())
EOF
chmod +x "$BIN/nf3-hybrid"
echo "nf3-hybrid: installed into $SITE (vLLM $HAVE)"

pip_extras() {
  if [ "$DRY" = 1 ]; then echo "nf3-hybrid: would run: $PY -m pip install --quiet $*"; else "$PY" -m pip install --quiet "$@"; fi
}
if [ "$EXTRAS" = 1 ] && [ "$PROFILE" = default ]; then
  pip_extras "b12x==$(ver B12X)" "fastsafetensors==$(ver FASTSAFETENSORS)"
  echo "nf3-hybrid: extras b12x $(ver B12X), fastsafetensors $(ver FASTSAFETENSORS)"
elif [ "$EXTRAS" = 1 ]; then
  cat >&2 <<MSG
nf3-hybrid: profile b12x-nf3 (opt-in, for HYBRID_KEPT=b12x_nf3 on SM120/121 GPUs).
  It installs b12x $(ver B12X_NF3) and nvidia-cutlass-dsl 4.6.0 in place of the pinned b12x $(ver B12X):
  b12x $(ver B12X_NF3) is the last release with the NF3 (nf3_2p1) W4A16 layout. Version conflict:
  vLLM $(ver VLLM) pins nvidia-cutlass-dsl 4.8.0; pip runs with --no-deps, so vLLM stays installed
  but its own CuTe-DSL kernels (its b12x MoE / GEMM backends on SM120) then run on 4.6.0,
  untested. Verified on a CPU: our NF3 -> nf3_2p1 conversion is byte-equal to b12x $(ver B12X_NF3)'s
  packers; b12x's tile selection, packers and expert map accept our tiers; the overlay
  recognises the release. Never run: b12x $(ver B12X_NF3)'s kernels (no SM120 GPU was available).
  Without this profile use HYBRID_KEPT=b12x (kept tier) with HYBRID_NF3=fast.
MSG
  # word splitting intended: one requirement per word
  # shellcheck disable=SC2046
  pip_extras --no-deps $(vers B12X_NF3_PROFILE)
  pip_extras "fastsafetensors==$(ver FASTSAFETENSORS)"
  echo "nf3-hybrid: extras profile b12x-nf3: $(vers B12X_NF3_PROFILE), fastsafetensors $(ver FASTSAFETENSORS)"
fi

if [ "$CHECK" = 1 ]; then
  "$PY" -c '
import sys
import nf3_hybrid.hook as h
from nf3_hybrid.doctor import hook_in_spawned_child
fresh = h.status()["armed"]
spawned = hook_in_spawned_child()["armed"]
print(f"nf3-hybrid: hook armed in a fresh interpreter: {fresh}; in a spawned child: {spawned}")
sys.exit(0 if fresh and spawned else 1)
'
fi
