#!/bin/bash
# Fetches Debian's kernel and busybox-static packages with apt (the host's
# configured sources), extracts them (nothing is installed on the host) and
# makes what a guest boots from:
#   <out>/kroot/           the extracted linux-image package (its modules go into the image)
#   <out>/vmlinux          the uncompressed kernel: QEMU enters it through PVH, which skips
#                          real-mode setup and the xz decompression (seconds under emulation)
#   <out>/initrd.cpio.gz   a busybox initramfs (virtio, ext4, 9p) that switch_roots to systemd
set -euo pipefail
out=$(mkdir -p "${1:?usage: prepare-kernel.sh <outdir>}" && readlink -f "$1")
here=$(dirname "$(readlink -f "$0")")
mkdir -p "$out/debs"
cd "$out/debs"
kernel_package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
apt-get download -q "$kernel_package" busybox-static 2>&1 | grep -v 'Download is performed unsandboxed' || true
rm -rf "$out/kroot" "$out/bbroot"
mkdir -p "$out/kroot" "$out/bbroot"
dpkg-deb -x "$out"/debs/"$kernel_package"_*.deb "$out/kroot"
dpkg-deb -x "$out"/debs/busybox-static_*.deb "$out/bbroot"
version=${kernel_package#linux-image-}
depmod -b "$out/kroot" "$version"
python3 - "$out/kroot/boot/vmlinuz-$version" "$out/vmlinux" <<'PY'
import lzma, sys
image = open(sys.argv[1], 'rb').read()
start = image.find(b'\xfd7zXZ\x00')  # Debian builds its kernels with CONFIG_KERNEL_XZ
assert start > 0, "no xz payload in the kernel image"
open(sys.argv[2], 'wb').write(lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(image[start:]))
PY
"$here/mk-initramfs.sh" "$out/kroot" "$out/bbroot/bin/busybox" "$out/initrd.cpio.gz"
echo "kernel $version ready in $out"
