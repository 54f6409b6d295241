#!/usr/bin/env python3
"""Prints the pinned stack (one requirement per line) from overlay/nf3_hybrid/versions.py
without importing the package (which needs torch)."""
import runpy
from pathlib import Path

versions = runpy.run_path(str(Path(__file__).resolve().parent.parent / "overlay" / "nf3_hybrid" / "versions.py"))
import sys

key = "B12X_NF3_SIDE_STACK" if "--b12x-nf3-side" in sys.argv else "STACK"
print("\n".join(versions[key]))
