# Sourced by the benches that compare rtick with a tool of rt-tests
# (vs-cyclictest.sh, noise-vs-oslat.sh), from the repository's root:
#   . bench/rt-tests.sh TOOL
# installs rt-tests when TOOL is not on the PATH, builds rtick's release
# binary and sets RTICK to it and `out` to a new directory for the results.

if ! command -v "$1" >/dev/null 2>&1; then
  echo "installing rt-tests ($1)…"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rt-tests >/dev/null
fi
cargo build --release -q --bin rtick
RTICK=${CARGO_TARGET_DIR:-target}/release/rtick
out=$(mktemp -d)
