# Sourced by the h200-*.sh scripts on the GPU host: installs the carried iree-base-runtime wheel
# and braze into /tmp/site, unpacks .gpu/art.tar.xz into /tmp/art, sets $out (the run's $OUT).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/*.whl && \
  python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore PATH=/tmp/site/bin:$PATH
mkdir -p /tmp/art && tar xJf .gpu/art.tar.xz -C /tmp/art || exit 1
out=${OUT:-/tmp/out}; mkdir -p $out
