#!/usr/bin/env bash
# Drop-in install of the nf3-hybrid overlay into an existing Python environment that
# has vLLM: copies the package and its .pth into that environment's site-packages
# (every Python process there — vLLM's TP workers included — then arms the hook),
# adds the `nf3-hybrid` command, and installs the pinned extras.
#
#   scripts/install_overlay.sh [--python PY] [--no-extras] [--force] [--uninstall] [--check]
#
#   --python PY   interpreter of the target environment (default: $VIRTUAL_ENV/bin/python,
#                 else python3 on PATH)
#   --no-extras   do not pip-install b12x / fastsafetensors
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
EXTRAS=1 FORCE=0 UNINSTALL=0 CHECK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --python) PY=$2; shift 2;;
    --no-extras) EXTRAS=0; shift;;
    --force) FORCE=1; shift;;
    --uninstall) UNINSTALL=1; shift;;
    --check) CHECK=1; shift;;
    -h|--help) sed -n '2,20p' "$0"; exit 0;;
    *) echo "install_overlay: unknown option $1" >&2; exit 2;;
  esac
done

command -v "$PY" >/dev/null 2>&1 || { echo "install_overlay: no Python interpreter '$PY'" >&2; exit 2; }
# HYBRID_DISABLE: the target's own (possibly broken) overlay must not run while we inspect it
SITE=$(HYBRID_DISABLE=1 "$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
BIN=$(HYBRID_DISABLE=1 "$PY" -c 'import sysconfig; print(sysconfig.get_paths()["scripts"])')
ver() { "$PY" -c "import runpy; print(runpy.run_path('$HERE/overlay/nf3_hybrid/versions.py')['$1'])"; }

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

if [ "$EXTRAS" = 1 ]; then
  "$PY" -m pip install --quiet "b12x==$(ver B12X)" "fastsafetensors==$(ver FASTSAFETENSORS)"
  echo "nf3-hybrid: extras b12x $(ver B12X), fastsafetensors $(ver FASTSAFETENSORS)"
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
