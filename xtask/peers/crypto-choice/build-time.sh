#!/usr/bin/env bash
# Clean `cargo build --release` wall time of ring alone and aws-lc-rs alone, each in a
# throwaway one-dependency crate under target/build-time/, run one after the other.
#
#   ./build-time.sh            # normal PATH
#   MINIMAL_PATH=1 ./build-time.sh
#       PATH holds only cargo/rustc and the C toolchain (cc, ar, as, ld, sh and coreutils):
#       no cmake, no Go, no perl, no clang, no nasm. Shows which tools each crate really needs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$here/target/build-time
mkdir -p "$root"
jobs=${JOBS:-2}

path=$PATH
if [[ -n "${MINIMAL_PATH:-}" ]]; then
    bin=$root/minimal-bin
    rm -rf "$bin" && mkdir -p "$bin"
    for t in cc gcc c++ g++ cpp ar ranlib as ld ld.bfd nm objcopy strip sh bash dash env uname \
             cat cp mv rm mkdir ln ls sed grep tr head tail dirname basename readlink realpath \
             expr test true false touch sort uniq wc find xargs; do
        p=$(command -v "$t" || true)
        [[ -n "$p" ]] && ln -sf "$p" "$bin/$t"
    done
    # rustup's proxies (cargo, rustc) live here; nothing else does.
    path=$bin:$(dirname "$(command -v cargo)")
    for t in cmake go perl clang nasm; do
        if PATH=$path command -v "$t" >/dev/null; then echo "unexpected: $t on the minimal PATH"; fi
    done
fi

measure() { # name dependency-line
    local name=$1 dep=$2 dir=$root/$1
    mkdir -p "$dir/src"
    cat > "$dir/Cargo.toml" <<TOML
[package]
name = "bt-$name"
version = "0.0.0"
edition = "2021"
publish = false
[workspace]
[dependencies]
$dep
TOML
    echo 'fn main() {}' > "$dir/src/main.rs"
    (cd "$dir" && PATH=$path cargo fetch -q)
    rm -rf "$dir/target"
    local load start end
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date +%s%N)
    if (cd "$dir" && PATH=$path cargo build --release -j "$jobs" >"$dir/build.log" 2>&1); then
        end=$(date +%s%N)
        local ms=$(( (end - start) / 1000000 ))
        printf '%s: %d.%d s (load average before: %s, -j %s)\n' "$name" $((ms / 1000)) $((ms % 1000 / 100)) "$load" "$jobs"
    else
        echo "$name: BUILD FAILED, see $dir/build.log:"
        grep -E "error|warning: aws-lc|not found|No such" "$dir/build.log" | head -20
    fi
}

measure ring 'ring = "=0.17.14"'
measure aws-lc-rs 'aws-lc-rs = "=1.19.0"'
