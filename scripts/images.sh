#!/usr/bin/env bash
# The platform's two images for AWS (ECS on Fargate, ARM64), built without a registry: each is
# one arm64 release binary (the agent-holder crate's holder, the data-plane crate's data-plane)
# and the arm64 glibc libraries it links, loaded (`docker load` of an archive written here) as
# an image of nothing else (no shell, no package), run as 65534.
#
#   scripts/images.sh build [REV]   build both images from commit REV (HEAD), print their names
#   scripts/images.sh push [REV]    build them if absent, ensure the ECR repository, push, print
#                                   the template's parameter overrides
#
# The images are built from REV as committed (git archive), never from the working tree, since
# their tags name the commit: agent-hosting-platform:data-plane-<commit> and
# agent-hosting-platform:holder-<commit> (one repository, two images, so the tag also says which;
# the repository's tags are immutable, so a tag always names the same bytes).
# Toolchain: scripts/build.sh's (cargo-lambda with zig, Debian's rustc with its arm64 standard
# library); the libraries: Debian's libc6:arm64 and libgcc-s1:arm64 (dpkg's arm64 architecture is
# added with that toolchain). Push needs the AWS CLI (installed under .local/awscli-venv when
# missing), credentials allowed to use ECR and `AWS_REGION` (or a configured region).
set -euo pipefail
umask 022

root=$(cd "$(dirname "$0")/.." && pwd)
local_dir="$root/.local"
work="$local_dir/images"
bin_dir="$work/bin"
repository="agent-hosting-platform"
target=aarch64-unknown-linux-gnu
target_dir="${CARGO_TARGET_DIR:-$root/target}"

log() { printf '%s\n' "$*" >&2; }
die() { log "images: $*"; exit 1; }

# The tag's commit: 12 hex digits, as scripts/local.sh cuts its digests.
commit_of() { git -C "$root" rev-parse --short=12 --verify "${1}^{commit}"; }
image_name() { echo "$repository:$1-$2"; }

# REV's tree, exported with fresh mtimes (tar -m): cargo must never take a file of an older
# commit for newer than its last build.
export_source() {
  local rev=$1 src=$2
  rm -rf "$src"
  mkdir -p "$src"
  git -C "$root" archive "$rev" | tar -x -m -C "$src"
}

# build_binaries SRC SELECTION...: one cargo invocation for the binaries REV has (SELECTION:
# cargo's -p and --bin arguments), as scripts/build.sh builds the functions.
build_binaries() {
  local src=$1
  shift
  local lock_before
  "$root/scripts/local.sh" cargo-lambda
  "$root/scripts/local.sh" arm64-toolchain
  lock_before=$(sha256sum "$src/Cargo.lock")
  rm -rf "$bin_dir"
  (
    cd "$src"
    export PATH="$local_dir/venv/bin:$PATH" RUSTC=/usr/bin/rustc CARGO_INCREMENTAL=0
    export CARGO_TARGET_DIR="$target_dir" AWS_LC_SYS_NO_JITTER_ENTROPY=1
    # cargo lambda moves each binary to LAMBDA_DIR/<bin>/bootstrap.
    cargo lambda build --release --arm64 --quiet --lambda-dir "$bin_dir" "$@" >&2
  )
  [ "$(sha256sum "$src/Cargo.lock")" = "$lock_before" ] \
    || log "note: the commit's Cargo.lock did not match its manifests; cargo resolved it again"
}

# Debian's arm64 libc6 and libgcc-s1, and ca-certificates' roots, unpacked into $1 (what an image
# holds is picked from there).
unpack_libraries() {
  local sysroot=$1 debs
  rm -rf "$sysroot"
  mkdir -p "$sysroot"
  debs=$(mktemp -d)
  # Into a directory of ours: as root, apt would otherwise warn that its _apt user cannot write it.
  (cd "$debs" && apt-get -o APT::Sandbox::User="$(id -un)" download -qq \
    libc6:arm64 libgcc-s1:arm64 ca-certificates >/dev/null)
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
  rm -rf "$debs"
}

# The ELF's NEEDED names.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# stage_libraries BINARY SYSROOT STAGE: the loader the binary names and every library it needs,
# transitively, copied from SYSROOT to the same paths under STAGE (where Debian's loader looks
# without a cache: /lib/aarch64-linux-gnu, /usr/lib/aarch64-linux-gnu).
stage_libraries() {
  local binary=$1 sysroot=$2 stage=$3 interp queue=() elf name dir found
  interp=$(readelf -l "$binary" | sed -n 's/.*program interpreter: \(.*\)]/\1/p')
  [ -n "$interp" ] || die "$binary names no loader (not a dynamic arm64 ELF?)"
  (cd "$sysroot" && cp -L --parents ".$interp" "$stage")
  queue=("$binary")
  while [ ${#queue[@]} -gt 0 ]; do
    elf=${queue[0]}
    queue=("${queue[@]:1}")
    for name in $(needed "$elf"); do
      found=""
      for dir in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu; do
        if [ -e "$stage/$dir/$name" ]; then found=staged; break; fi
        if [ -e "$sysroot/$dir/$name" ]; then
          (cd "$sysroot" && cp -L --parents "$dir/$name" "$stage")
          queue+=("$stage/$dir/$name")
          found=copied
          break
        fi
      done
      [ -n "$found" ] || die "$name (needed by $(basename "$elf")) is in neither libc6 nor libgcc-s1"
    done
  done
}

# The newest glibc symbol version the binary asks for must be one the staged libc has.
check_glibc() {
  local binary=$1 sysroot=$2 wanted have
  wanted=$(readelf --version-info "$binary" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -n 1)
  have=$(readelf --version-info "$sysroot/lib/aarch64-linux-gnu/libc.so.6" |
    grep -o 'GLIBC_[0-9.]*' | sort -V | tail -n 1)
  [ "$(printf '%s\n%s\n' "$wanted" "$have" | sort -V | tail -n 1)" = "$have" ] \
    || die "$(basename "$binary") needs $wanted, the image's libc has up to $have"
  log "$(basename "$binary"): needs up to $wanted, libc has $have"
}

# import_image BINARY NAME IMAGE COMMIT SYSROOT [ca]: /NAME, its loader and libraries (and, with
# `ca`, Mozilla's roots at the path rustls-native-certs reads), loaded as IMAGE for linux/arm64.
import_image() {
  local binary=$1 name=$2 image=$3 commit=$4 sysroot=$5 ca=${6:-} stage
  stage=$(mktemp -d)
  chmod 0755 "$stage"
  install -m 0755 "$binary" "$stage/$name"
  stage_libraries "$stage/$name" "$sysroot" "$stage"
  check_glibc "$stage/$name" "$sysroot"
  if [ "$ca" = ca ]; then
    mkdir -p "$stage/etc/ssl/certs"
    cat "$sysroot"/usr/share/ca-certificates/mozilla/*.crt >"$stage/etc/ssl/certs/ca-certificates.crt"
  fi
  load_image "$stage" "$image" "$name" "$commit"
  rm -rf "$stage"
  verify_image "$image" "$name"
}

# load_image STAGE IMAGE NAME COMMIT: STAGE as the one layer of an image whose configuration we
# write ourselves, `docker load`ed. Not `docker import --platform linux/arm64`: Debian 12's
# dockerd (20.10) takes only the OS from --platform and labels the image amd64 (its own), wrong
# for the ARM64 tasks. Files' times are the commit's (a rebuilt identical binary gives the same
# layer).
load_image() {
  local stage=$1 image=$2 name=$3 commit=$4 archive created epoch diff_id
  archive=$(mktemp -d)
  epoch=$(git -C "$root" log -1 --format=%ct "$commit")
  created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
  tar -C "$stage" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
    -cf "$archive/layer.tar" .
  diff_id=sha256:$(sha256sum "$archive/layer.tar" | cut -d ' ' -f 1)
  cat >"$archive/config.json" <<JSON
{"architecture":"arm64","os":"linux","created":"$created",
 "config":{"User":"65534","Entrypoint":["/$name"],
  "Labels":{"org.opencontainers.image.revision":"$commit"}},
 "rootfs":{"type":"layers","diff_ids":["$diff_id"]},
 "history":[{"created":"$created","created_by":"scripts/images.sh $name"}]}
JSON
  printf '[{"Config":"config.json","RepoTags":["%s"],"Layers":["layer.tar"]}]\n' "$image" \
    >"$archive/manifest.json"
  tar -C "$archive" -c manifest.json config.json layer.tar | docker load -q >/dev/null
  log "$image: layer $(stat -c %s "$archive/layer.tar") bytes, gzip $(gzip -c "$archive/layer.tar" | wc -c) bytes (what ECR stores and Fargate pulls, about)"
  rm -rf "$archive"
}

# What Fargate (ARM64, user 65534) needs of the image, read back from the engine.
verify_image() {
  local image=$1 name=$2 config
  config=$(docker image inspect -f '{{.Os}}/{{.Architecture}} user={{.Config.User}} entrypoint={{json .Config.Entrypoint}}' "$image")
  [ "$config" = "linux/arm64 user=65534 entrypoint=[\"/$name\"]" ] || die "$image: unexpected $config"
  log "$image: $config, $(docker image inspect -f '{{.Size}}' "$image") bytes"
}

# build REV: both images (or the holder alone if REV has no data-plane binary yet; then fails).
build() {
  local rev=${1:-HEAD} commit holder data_plane selection=() started src sysroot
  commit=$(commit_of "$rev")
  holder=$(image_name holder "$commit")
  data_plane=$(image_name data-plane "$commit")
  "$root/scripts/local.sh" docker-engine
  local has_data_plane=yes
  git -C "$root" cat-file -e "$commit:dataplane/src/bin/data-plane.rs" 2>/dev/null || has_data_plane=no
  if docker image inspect "$holder" >/dev/null 2>&1 &&
    { [ $has_data_plane = no ] || docker image inspect "$data_plane" >/dev/null 2>&1; }; then
    log "already built for $commit"
  else
    # The holder from its own crate, whose few dependencies are all it builds when alone; a REV
    # without that crate has it as the data plane crate's binary.
    if git -C "$root" cat-file -e "$commit:holder/Cargo.toml" 2>/dev/null; then
      selection=(-p agent-holder --bin holder)
    else
      selection=(-p data-plane --bin holder)
    fi
    if [ $has_data_plane = yes ]; then selection+=(-p data-plane --bin data-plane); fi
    src="$work/src"
    sysroot="$work/sysroot-arm64"
    export_source "$commit" "$src"
    started=$SECONDS
    log "building ${selection[*]} for $target (release) from $commit"
    build_binaries "$src" "${selection[@]}"
    log "cargo lambda build: $((SECONDS - started)) s"
    unpack_libraries "$sysroot"
    import_image "$bin_dir/holder/bootstrap" holder "$holder" "$commit" "$sysroot"
    # The data plane speaks TLS to AWS: the system store is its fallback where Amazon's embedded
    # roots do not apply (shared::aws::trust), as the functions' runtime has one.
    if [ $has_data_plane = yes ]; then
      import_image "$bin_dir/data-plane/bootstrap" data-plane "$data_plane" "$commit" "$sysroot" ca
    fi
    rm -rf "$src"
  fi
  echo "$holder"
  if [ $has_data_plane = no ]; then
    log "images: $commit has no dataplane/src/bin/data-plane.rs: no data-plane image"
    return 1
  fi
  echo "$data_plane"
}

ensure_aws_cli() {
  aws_cli=$("$root/scripts/local.sh" aws-cli)
}

# The repository (created if missing), with immutable tags and a scan on each push, set again
# every time, so an existing one is brought to the same settings.
ensure_repository() {
  local region=$1
  if ! "$aws_cli" ecr describe-repositories --region "$region" \
    --repository-names "$repository" >/dev/null 2>&1; then
    log "creating the ECR repository $repository in $region"
    "$aws_cli" ecr create-repository --region "$region" --repository-name "$repository" \
      --image-tag-mutability IMMUTABLE --image-scanning-configuration scanOnPush=true >/dev/null
  fi
  "$aws_cli" ecr put-image-tag-mutability --region "$region" --repository-name "$repository" \
    --image-tag-mutability IMMUTABLE >/dev/null
  "$aws_cli" ecr put-image-scanning-configuration --region "$region" \
    --repository-name "$repository" --image-scanning-configuration scanOnPush=true >/dev/null
}

# push_one IMAGE REGISTRY REGION: an existing tag is left alone (immutable: it is this commit's).
push_one() {
  local image=$1 registry=$2 region=$3 tag=${1#*:}
  if "$aws_cli" ecr describe-images --region "$region" --repository-name "$repository" \
    --image-ids "imageTag=$tag" >/dev/null 2>&1; then
    log "$repository:$tag is already in ECR: not pushed again"
    return
  fi
  docker tag "$image" "$registry/$image"
  docker push "$registry/$image" >&2
}

push() {
  local rev=${1:-HEAD} commit region account registry suffix=amazonaws.com images
  commit=$(commit_of "$rev")
  images=$(build "$rev") || die "the data plane's image cannot be built from $commit"
  ensure_aws_cli
  region=${AWS_REGION:-${AWS_DEFAULT_REGION:-$("$aws_cli" configure get region || true)}}
  [ -n "$region" ] || die "no region: set AWS_REGION"
  case "$region" in cn-*) suffix=amazonaws.com.cn ;; esac
  account=$("$aws_cli" sts get-caller-identity --region "$region" --query Account --output text)
  registry="$account.dkr.ecr.$region.$suffix"
  ensure_repository "$region"
  "$aws_cli" ecr get-login-password --region "$region" |
    docker login --username AWS --password-stdin "$registry" >&2
  for image in $images; do push_one "$image" "$registry" "$region"; done
  log "pushed to $registry/$repository; deploy the stack in $account/$region with:"
  echo "DataPlaneImageTag=data-plane-$commit HolderImageTag=holder-$commit"
}

case "${1:-}" in
  build) shift; build "$@" ;;
  push) shift; push "$@" ;;
  *) log "usage: $0 build [REV] | push [REV]"; exit 2 ;;
esac
