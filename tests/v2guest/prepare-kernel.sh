#!/bin/bash
# Fetches Debian's kernel and busybox-static packages with apt (the host's
# configured sources), extracts them (nothing is installed on the host) and
# makes what a guest boots from:
#   <out>/kroot/           the extracted linux-image package (its modules go into the image)
#   <out>/vmlinux          the uncompressed kernel: QEMU enters it through PVH, which skips
#                          real-mode setup and the xz decompression (seconds under emulation)
#   <out>/initrd.cpio.gz   a busybox initramfs (virtio, ext4, 9p) that switch_roots to systemd
# Usage: prepare-kernel.sh <outdir> [package=version]
#   without a package: Debian 12's default kernel (what linux-image-amd64 depends on today);
#   with one, exactly that package and version (a second kernel, such as Debian 12's 6.12).
set -euo pipefail
out=$(mkdir -p "${1:?usage: prepare-kernel.sh <outdir> [package=version]}" && readlink -f "$1")
here=$(dirname "$(readlink -f "$0")")
mkdir -p "$out/debs"
cd "$out/debs"
if [ -n "${2:-}" ]; then
  kernel_package=${2%%=*}
  wanted=$2
else
  kernel_package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  wanted=$kernel_package
fi
apt-get download -q "$wanted" busybox-static 2>&1 | grep -v 'Download is performed unsandboxed' || true
[ -f "$(ls "$out"/debs/"$kernel_package"_*.deb 2>/dev/null | head -1)" ] ||
  { echo "prepare-kernel: Debian's archive no longer serves $wanted (apt-cache policy ${kernel_package})" >&2; exit 1; }
rm -rf "$out/kroot" "$out/bbroot"
mkdir -p "$out/kroot" "$out/bbroot"
dpkg-deb -x "$out"/debs/"$kernel_package"_*.deb "$out/kroot"
dpkg-deb -x "$out"/debs/busybox-static_*.deb "$out/bbroot"
version=${kernel_package#linux-image-}
depmod -b "$out/kroot" "$version"
python3 - "$out/kroot/boot/vmlinuz-$version" "$out/vmlinux" <<'PY'
import lzma, struct, subprocess, sys
image = open(sys.argv[1], 'rb').read()
xz, zstd = image.find(b'\xfd7zXZ\x00'), image.find(b'\x28\xb5\x2f\xfd')
if xz > 0:  # Debian 12's 6.1 (CONFIG_KERNEL_XZ)
    elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(image[xz:])
elif zstd > 0:  # 6.12 (CONFIG_KERNEL_ZSTD); zstd then stops at the bytes after the frame, with rc 1
    elf = subprocess.run(['zstd', '-dc'], input=image[zstd:], capture_output=True).stdout
else:
    sys.exit("no xz or zstd payload in the kernel image")
# Whole: an ELF whose section headers lie inside what came out.
shoff, = struct.unpack_from('<Q', elf, 0x28)
shentsize, shnum = struct.unpack_from('<HH', elf, 0x3a)
assert elf[:4] == b'\x7fELF' and shoff + shentsize * shnum <= len(elf), "the kernel image did not decompress whole"
open(sys.argv[2], 'wb').write(elf)
PY
"$here/mk-initramfs.sh" "$out/kroot" "$out/bbroot/bin/busybox" "$out/initrd.cpio.gz"
echo "kernel $version ready in $out"
