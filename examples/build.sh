#!/usr/bin/env bash
# Regenerates every examples/*.ptx from its .cu with the CUDA 13.0 toolkit, then proves each with ptxas.
# Same steps as fixtures/nvcc/build.sh. Run from anywhere: bash examples/build.sh [NAME.cu ...]
# Command used for every file (run inside this folder, relative paths, so no machine path enters the PTX):
#   nvcc -arch=sm_100a -ptx -lineinfo NAME.cu -o NAME.ptx
# then .file paths are cut to the file name (sed below).
set -euo pipefail
cd "$(dirname "$0")"
files=("$@"); [ ${#files[@]} -gt 0 ] || files=(*.cu)
for cu in "${files[@]}"; do
  ptx="${cu%.cu}.ptx"
  nvcc -arch=sm_100a -ptx -lineinfo "$cu" -o "$ptx"
  # keep only file names in .file directives: the PTX must not name a path of the build machine
  sed -E -i 's#^([[:space:]]*\.file[[:space:]]+[0-9]+[[:space:]]+")[^"]*/([^"/]*")#\1\2#' "$ptx"
  ptxas -arch=sm_100a "$ptx" -o /dev/null
  echo "built $ptx"
done
