#!/bin/sh
# Builds the worker image's base, debian:bookworm-slim, from Debian's own
# packages when the engine has no such image and no registry can be reached:
# mmdebstrap lays out a minimal bookworm and `docker import` names it as the
# registry's image is named, so docker/Dockerfile stays as it is for users
# who can pull. Needs root and mmdebstrap; takes a minute or two.
set -eu
image=${BASE_IMAGE:-debian:bookworm-slim}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if docker image inspect "$image" >/dev/null 2>&1; then
	echo "base image $image: present"
	exit 0
fi
tar=$(mktemp -d)/rootfs.tar
trap 'rm -rf "$(dirname "$tar")"' EXIT
echo "base image $image: building it from $mirror with mmdebstrap"
# As Debian's own slim images: no manuals, docs or translations.
mmdebstrap --quiet --variant=minbase \
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-exclude=/usr/share/info/*' \
	--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
	bookworm "$tar" "$mirror"
docker import --change 'CMD ["bash"]' "$tar" "$image" >/dev/null
echo "base image $image: built locally ($(docker image inspect -f '{{.Size}}' "$image") bytes)"
