#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Boots Debian 12's own kernel (the bookworm linux-image-amd64, 6.1 LTS) under
# qemu and runs the fast path's tests inside it (tests/kernel/guest.sh): the
# BPF_PROG_TEST_RUN tier, xkvd loading and attaching its program on lo and a
# kernel-answered UDP GET, and the e2e tier. The guest sees the host's root
# read-only over virtio-9p, so it runs the binaries this checkout built, with
# the host's libraries, against its own kernel. Prints TAP; `make test-kernel-6.1`.
#
# Usage: tests/kernel/run.sh [-o OUTPUT] [-p linux-image-PACKAGE] [-t SECONDS] [-e] [-r] [-b OBJ]
#   -e  also run the e2e tier in the guest (namespaces, veth, native XDP)
#   -r  also run the TCP reproducer (tests/tcp-fastpath, built by make test-tcp-fastpath)
#   -b  only load the BPF object OBJ in the guest (its verifier log: OUTPUT/kernel/share)
set -u
cd "$(dirname "$0")/../.."
REPO=$(pwd)
OUTPUT=.output PKG= TIMEOUT=600 E2E=0 REPRO=0 PROBE=
while getopts o:p:t:erb: opt; do
	case $opt in
	o) OUTPUT=$OPTARG ;;
	p) PKG=$OPTARG ;;
	t) TIMEOUT=$OPTARG ;;
	e) E2E=1 ;;
	r) REPRO=1 ;;
	b) PROBE=$(realpath "$OPTARG") ;;
	*) exit 2 ;;
	esac
done
OUTPUT=$(cd "$OUTPUT" && pwd) || exit 2
WORK=$OUTPUT/kernel
mkdir -p "$WORK"

t0=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
die() { echo "Bail out! $*"; exit 1; }

need=
for p in qemu-system-x86 busybox-static; do
	dpkg-query -W -f='${db:Status-Abbrev}' $p 2>/dev/null | grep -q '^ii' || need="$need $p"
done
if [ -n "$need" ]; then
	echo "# installing:$need"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends $need >/dev/null || die "apt-get install$need"
fi

# linux-image-amd64 is the metapackage: it depends on the current 6.1.0-N image.
if [ -z "$PKG" ]; then
	PKG=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-6\.1[^ ]*\)$/\1/p' | head -1)
	[ -n "$PKG" ] || die "cannot resolve linux-image-amd64 (apt-get update?)"
fi
KVER=${PKG#linux-image-}
ROOT=$WORK/$KVER
if [ ! -f "$ROOT/boot/vmlinuz-$KVER" ]; then
	echo "# fetching $PKG"
	rm -rf "$ROOT" && mkdir -p "$ROOT"
	(cd "$WORK" && apt-get download -q "$PKG" 2>&1 | grep -v '^W: Download is performed unsandboxed') ||
		die "apt-get download $PKG"
	deb=$(ls "$WORK/${PKG}_"*.deb | tail -1)
	dpkg-deb -x "$deb" "$ROOT" || die "dpkg-deb -x $deb"
	rm -f "$deb"
	depmod -b "$ROOT" "$KVER" || die "depmod $KVER"
fi
t_fetch=$(elapsed "$t0")

# KVM where it works: under nested virtualisation (a Firecracker host here)
# /dev/kvm can exist while a guest hangs before its first line or fails to
# set an MSR, so a 10 s probe boot must print the kernel's banner first.
ACCEL=(-accel tcg -cpu max)
if [ "${KVM:-auto}" != no ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	if timeout 10 qemu-system-x86_64 -enable-kvm -cpu host -m 256 -nographic -no-reboot \
		-kernel "$ROOT/boot/vmlinuz-$KVER" -append "console=ttyS0 panic=-1" -nic none \
		</dev/null 2>&1 | grep -q -m1 'Linux version'; then
		ACCEL=(-enable-kvm -cpu host)
	else
		echo "# /dev/kvm does not boot a guest here; using TCG (software emulation)"
	fi
fi
how=TCG TORN=20000
[ "${ACCEL[0]}" = -enable-kvm ] && how=KVM TORN=200000

# The initramfs: busybox, the modules needed to mount the host root over 9p
# (modprobe --show-depends orders them), and /init.
INITRD=$WORK/initramfs-$KVER.cpio.gz
IR=$WORK/initramfs
rm -rf "$IR" && mkdir -p "$IR"/{bin,dev,proc,sys,host,share,mods}
cp /bin/busybox "$IR/bin/busybox"
for m in virtio_pci 9pnet_virtio 9p; do
	modprobe -d "$ROOT" -S "$KVER" --show-depends $m | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' | while read -r ko; do
	cp "$ko" "$IR/mods/"
	basename "$ko" >>"$IR/mods/order"
done
cat >"$IR/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for ko in \$(cat /mods/order); do insmod /mods/\$ko || echo "# insmod \$ko failed"; done
# The kernel loads modules (veth...) with the initramfs's root: run the host's
# modprobe in the chroot, on the unpacked package's modules (the host may have
# no /lib/modules to mount them on).
printf '#!/bin/sh\nexec chroot /host /sbin/modprobe -d $ROOT "\$@"\n' >/bin/modprobe-host
chmod +x /bin/modprobe-host
echo /bin/modprobe-host >/proc/sys/kernel/modprobe
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot /host || echo "Bail out! mount hostroot"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share /share || echo "Bail out! mount share"
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
mount -t tmpfs tmp /host/tmp
mount -t tmpfs run /host/run
mount -t bpf bpf /host/sys/fs/bpf
mount -t debugfs debugfs /host/sys/kernel/debug 2>/dev/null
mkdir -p /host/tmp/share && mount -o bind /share /host/tmp/share
echo "# guest up: \$(cat /proc/uptime)"
chroot /host /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp \
	XKV_MODDIR=$ROOT XKV_E2E=$E2E XKV_REPRO=$REPRO XKV_XKVD=${XKV_XKVD:-} XKV_PROBE_OBJ=$PROBE XKV_TORN_RUNS=$TORN /bin/bash $REPO/tests/kernel/guest.sh $OUTPUT 2>&1 | tee /share/guest.log
echo "# guest done: \$(cat /proc/uptime)"
sync
poweroff -f
EOF
chmod +x "$IR/init"
(cd "$IR" && find . | cpio -o -H newc --quiet | gzip -1) >"$INITRD" || die "initramfs"
rm -rf "$IR"

SHARE=$WORK/share
rm -rf "$SHARE" && mkdir -p "$SHARE"
echo "# booting $KVER ($how), timeout ${TIMEOUT}s"
t_boot=$(date +%s.%N)
timeout "$TIMEOUT" qemu-system-x86_64 "${ACCEL[@]}" -smp 2 -m 2048 -nographic -no-reboot \
	-kernel "$ROOT/boot/vmlinuz-$KVER" -initrd "$INITRD" \
	-append "console=ttyS0 panic=-1 quiet loglevel=3" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs local,path="$SHARE",mount_tag=share,security_model=none \
	-nic none -serial mon:stdio </dev/null >"$WORK/console.log" 2>&1
rc=$?
t_run=$(elapsed "$t_boot")
[ "$rc" -eq 124 ] && echo "not ok - the guest did not power off within ${TIMEOUT}s"
# TAP from the guest, without the serial console's carriage returns.
tr -d '\r' <"$WORK/console.log" | grep -E '^(ok |not ok |# |Bail out!|1\.\.)' | grep -v '^# tier:'
echo "# $KVER: fetch and unpack ${t_fetch}s, boot and run ${t_run}s (console: $WORK/console.log)"
grep -q '^# guest done' <(tr -d '\r' <"$WORK/console.log") || { echo "not ok - the guest did not finish"; exit 1; }
! tr -d '\r' <"$WORK/console.log" | grep -qE '^(not ok |Bail out!)'
