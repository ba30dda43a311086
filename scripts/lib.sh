# Shared by the timing scripts (`source "$(dirname "$0")/lib.sh"`): the work dir, the generated
# packages, wall-clock seconds and medians.

# work_dir SCRIPT [DIR]: sets `repo` (this repository) and `work` (DIR, or a new `mktemp -d`
# named after SCRIPT), made absolute; exits with 2 when the work dir lies inside the repository.
work_dir() {
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    work="${2:-$(mktemp -d -t "$1.XXXXXX")}"
    mkdir -p "$work"
    work="$(cd "$work" && pwd)"
    case "$work/" in
    "$repo"/*)
        echo "$1.sh: the work dir $work is inside the repository; pass a dir outside it" >&2
        exit 2
        ;;
    esac
}

# package NAME DEPENDENCIES: writes the manifest of the package NAME under the work dir, with
# these `[dependencies]` lines, and makes its `src` dir.
package() {
    mkdir -p "$work/$1/src"
    cat >"$work/$1/Cargo.toml" <<EOT
[package]
name = "$1"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
$2
EOT
}

# The profile settings of the repository's workspace, as a manifest writes them.
profile_settings() {
    cat <<EOT
[profile.dev]
debug = "line-tables-only"

[profile.dev.package."*"]
debug = false
EOT
}

# seconds COMMAND...: wall-clock seconds the command took (its output discarded).
seconds() {
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}

# median NUMBER...: the middle one (the upper middle of an even count).
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
