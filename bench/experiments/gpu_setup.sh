# Sourced by the GPU-host run scripts (cuda-*.sh, vulkan-*.sh, xeon-*.sh, gpu-*.sh) there: installs the carried iree-base-runtime wheel
# and braze into /tmp/site, unpacks .gpu/art.tar.xz into a fresh /tmp/art (a warm machine kept the last call's), sets $out (the run's $OUT).
# braze comes from the working tree, or from .gpu/braze.tar when there is one
# (`git archive -o .gpu/braze.tar HEAD`: a committed state while the tree has edits in progress).
set -o pipefail
src=.
if [ -f .gpu/braze.tar ]; then src=/tmp/braze-src; mkdir -p $src && tar xf .gpu/braze.tar -C $src || exit 1; fi
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/*.whl && \
  python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site $src || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore PATH=/tmp/site/bin:$PATH
rm -rf /tmp/art; mkdir -p /tmp/art && tar xJif .gpu/art.tar.xz -C /tmp/art || exit 1  # -i: packs may be several archives, concatenated
out=${OUT:-/tmp/out}; mkdir -p $out
