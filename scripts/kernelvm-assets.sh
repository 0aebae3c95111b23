#!/usr/bin/env bash
# kernelvm-assets.sh [DIR]
#
# Prepares the assets that testrig/kernelvm boots test VMs with: a Debian
# kernel (vmlinuz), the few kernel modules the tests need (decompressed, so
# busybox insmod can load them), a dependency list for them, and a static
# busybox for the initramfs.
#
# DIR defaults to $VIRTNET_KERNELVM_DIR, else $HOME/.cache/virtnet/kernelvm.
# Idempotent: a complete DIR is left alone (set VIRTNET_KERNELVM_FORCE=1 to
# rebuild it). Prints DIR on success, and nothing else on stdout.
#
# Needs (Debian 12): apt, dpkg, xz-utils, busybox-static; qemu-system-x86 is
# needed to boot the VM, not to build the assets. Must run as root when it has
# to `apt-get update` (it does so only if apt knows no linux-image-amd64).
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
set -euo pipefail

dir="${1:-${VIRTNET_KERNELVM_DIR:-${HOME:-/root}/.cache/virtnet/kernelvm}}"
stamp="$dir/COMPLETE"

log() { printf 'kernelvm-assets: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The stamp holds this script's checksum: editing the script (say, its
# module list) rebuilds the assets on the next run.
self_sum=$(sha256sum "$0" | cut -d' ' -f1)
if [[ -f "$stamp" && "$(tail -n1 "$stamp")" == "$self_sum" && "${VIRTNET_KERNELVM_FORCE:-0}" != 1 ]]; then
	log "assets already complete ($(cat "$dir/VERSION" 2>/dev/null || echo '?'))"
	echo "$dir"
	exit 0
fi

for tool in apt-get apt-cache dpkg-deb tar xz grep od; do
	command -v "$tool" >/dev/null || die "missing tool '$tool' (install: apt-get install -y apt dpkg xz-utils)"
done
busybox=/bin/busybox
[[ -x "$busybox" ]] || die "missing $busybox (install: apt-get install -y busybox-static)"
# busybox-static ships a binary without a program interpreter; the dynamic
# `busybox` package would not run in the initramfs.
if LC_ALL=C od -An -c -N 4096 "$busybox" | tr -d ' \n' | grep -q 'ld-linux'; then
	die "$busybox is dynamically linked (install: apt-get install -y busybox-static)"
fi

meta=linux-image-amd64
if ! apt-cache show "$meta" >/dev/null 2>&1; then
	log "apt knows no $meta; running apt-get update"
	apt-get update -qq >&2
fi
# The metapackage depends on the versioned image package, e.g.
# linux-image-6.1.0-57-amd64.
pkg="$(apt-cache depends "$meta" | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
[[ -n "$pkg" ]] || die "cannot tell which linux-image package $meta depends on (apt-cache depends $meta)"
log "kernel package: $pkg"

work="$(mktemp -d "${TMPDIR:-/tmp}/kernelvm-assets.XXXXXX")"
trap 'rm -rf "$work"' EXIT
chmod 0755 "$work" # apt's _apt sandbox user writes the download here
(cd "$work" && apt-get download -q -o APT::Sandbox::User=root "$meta" "$pkg" >&2) || die "apt-get download $meta $pkg failed"
deb="$(ls "$work"/"$pkg"_*.deb 2>/dev/null | head -n1)"
[[ -n "$deb" ]] || die "apt-get download left no $pkg .deb in $work"
# Like `dpkg -x`, but unpack only the kernel and the module trees that
# hold what we keep (the whole package is ~400 MB unpacked).
mkdir -p "$work/root"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work/root" --wildcards \
	'./boot/vmlinuz-*' './lib/modules/*/kernel/drivers/net/*' './lib/modules/*/kernel/net/*' \
	'./lib/modules/*/kernel/drivers/virtio/*' './lib/modules/*/kernel/lib/*' './lib/modules/*/kernel/crypto/*' \
	'./lib/modules/*/kernel/fs/9p/*' './lib/modules/*/kernel/drivers/block/*' './lib/modules/*/kernel/fs/isofs/*' \
	'./lib/modules/*/kernel/drivers/cdrom/*' './lib/modules/*/kernel/fs/netfs/*' './lib/modules/*/kernel/fs/fscache/*' ||
	die "unpacking $deb failed"

vmlinuz="$(ls "$work"/root/boot/vmlinuz-* 2>/dev/null | head -n1)"
[[ -n "$vmlinuz" ]] || die "no boot/vmlinuz-* in $deb"
kver="${vmlinuz##*/vmlinuz-}"
mdir="$work/root/lib/modules/$kver"
[[ -d "$mdir/kernel" ]] || die "no lib/modules/$kver/kernel in $deb"

# The modules tests may ask for; their dependencies are added below. Names
# use '_' (the kernel treats '-' and '_' alike in module names).
wanted=(
	dummy macvlan macvtap tap tun veth 8021q
	bridge
	nf_tables nft_chain_nat nf_nat nf_conntrack nf_defrag_ipv4 nf_defrag_ipv6
	nft_masq nft_nat nft_ct nft_reject nft_reject_inet nft_fib_inet libcrc32c
	virtio virtio_ring virtio_pci virtio_net failover net_failover
	virtio_blk isofs loop
	9p 9pnet 9pnet_virtio                     # the host root share (kernelvm Options.HostRoot)
)

modname() { # path -> module name
	local n="${1##*/}"
	n="${n%%.ko*}"
	printf '%s' "${n//-/_}"
}

# name -> file for every module of the package (the package ships no
# modules.dep: depmod writes it at install time).
declare -A path_of
while IFS= read -r p; do
	path_of[$(modname "$p")]="$p"
done < <(find "$mdir/kernel" -name '*.ko*' -type f)

out="$work/out"
mkdir -p "$out/modules"

# Decompress into out/modules/<name>.ko, then read "depends=" from the
# module's .modinfo strings (NUL-separated) to walk the dependency closure.
# Modules built into this kernel have no file and are skipped with a note.
declare -A deps_of
queue=("${wanted[@]}")
while ((${#queue[@]})); do
	n="${queue[0]}"
	queue=("${queue[@]:1}")
	[[ -n "${deps_of[$n]+x}" ]] && continue
	p="${path_of[$n]:-}"
	if [[ -z "$p" ]]; then
		# A dependency named by depends= must exist as a file.
		[[ " ${wanted[*]} " == *" $n "* ]] || die "module dependency $n has no file in $deb"
		log "note: $n is not a module of $kver (built in or absent); skipped"
		deps_of[$n]=""
		rm -f "$out/modules/$n.ko"
		continue
	fi
	case "$p" in
	*.ko.xz) xz -dc "$p" >"$out/modules/$n.ko" ;;
	*.ko.zst)
		command -v zstd >/dev/null || die "missing zstd for $p (apt-get install -y zstd)"
		zstd -qdc "$p" >"$out/modules/$n.ko"
		;;
	*.ko.gz) gzip -dc "$p" >"$out/modules/$n.ko" ;;
	*.ko) cp "$p" "$out/modules/$n.ko" ;;
	*) die "unexpected module file $p" ;;
	esac
	d="$(tr '\0' '\n' <"$out/modules/$n.ko" | sed -n 's/^depends=//p' | head -n1)"
	d="${d//,/ }"
	# A "softdep=pre: X" names a module (or an alias of one) that must be
	# loaded first although no symbol says so: libcrc32c's init asks the
	# crypto API for "crc32c" and fails (ENOENT) without crc32c_generic.
	# Pre-softdeps that are a module's name, or a name with "_generic",
	# become dependencies; others are left to the kernel.
	for x in $(tr '\0' '\n' <"$out/modules/$n.ko" | sed -n 's/^softdep=pre: *//p'); do
		x="${x//-/_}"
		if [[ -n "${path_of[$x]:-}" ]]; then
			d="$d $x"
		elif [[ -n "${path_of[${x}_generic]:-}" ]]; then
			d="$d ${x}_generic"
		fi
	done
	d="${d//-/_}"
	d="${d# }"
	deps_of[$n]="$d"
	for x in $d; do queue+=("$x"); done
done

# modules.dep in the asset dir: "name: dep1 dep2" with flat files
# modules/<name>.ko; the runner orders the loads from it.
: >"$out/modules.dep"
for n in "${!deps_of[@]}"; do
	[[ -f "$out/modules/$n.ko" ]] || continue
	printf '%s:%s\n' "$n" "${deps_of[$n]:+ ${deps_of[$n]}}" >>"$out/modules.dep"
done
sort -o "$out/modules.dep" "$out/modules.dep"

cp "$vmlinuz" "$out/vmlinuz"
# Under TCG the bzImage spends seconds decompressing itself. QEMU can boot
# the uncompressed ELF vmlinux directly through its PVH entry point, so
# keep that too when the kernel has one (XEN_ELFNOTE_PHYS32_ENTRY); the
# runner prefers it.
extract_vmlinux() {
	local magic tool off
	for pair in 'fd377a585a00:xz' '28b52ffd:zstd' '1f8b0800:gzip'; do
		magic="${pair%%:*}" tool="${pair##*:}"
		command -v "$tool" >/dev/null || continue
		off="$(LC_ALL=C grep -obUaP "$(sed 's/../\\x&/g' <<<"$magic")" "$vmlinuz" | head -n1 | cut -d: -f1)"
		[[ -n "$off" ]] || continue
		case "$tool" in
		xz) tail -c +$((off + 1)) "$vmlinuz" | xz -dc --single-stream >"$out/vmlinux" 2>/dev/null ;;
		*) tail -c +$((off + 1)) "$vmlinuz" | "$tool" -dc >"$out/vmlinux" 2>/dev/null ;;
		esac
		if [[ "$(head -c 4 "$out/vmlinux" | od -An -tx1 | tr -d ' \n')" == 7f454c46 ]] &&
			LC_ALL=C grep -qaP '(?s)\x04\x00\x00\x00.{4}\x12\x00\x00\x00Xen\x00' "$out/vmlinux"; then
			return 0
		fi
	done
	rm -f "$out/vmlinux"
	return 1
}
if extract_vmlinux; then
	log "kept the uncompressed vmlinux for a PVH boot"
else
	log "note: no PVH-bootable vmlinux in $vmlinuz; the runner will boot the bzImage (slower)"
fi
cp "$busybox" "$out/busybox"
printf '%s\n' "$kver" >"$out/VERSION"
printf '%s\n' "$pkg" >"$out/PACKAGE"

mkdir -p "$dir"
rm -rf "$dir/modules"
cp -r "$out/modules" "$dir/modules"
rm -f "$dir/vmlinux" "$stamp"
cp "$out/modules.dep" "$out/vmlinuz" "$out/busybox" "$out/VERSION" "$out/PACKAGE" "$dir/"
[[ -f "$out/vmlinux" ]] && cp "$out/vmlinux" "$dir/"
{ date -u +%Y-%m-%dT%H:%M:%SZ; echo "$self_sum"; } >"$stamp"
log "assets ready: kernel $kver, $(ls "$dir/modules" | wc -l) modules"
echo "$dir"
