# Shell helpers for make matrix and make bench MAJOR=N: one Debian chroot per
# PostgreSQL major, set up by debootstrap from the Debian suite that ships it
# and kept for the next run.
#
# Environment: FLAKE_MATRIX_DIR, where the chroots live
# (/var/cache/flake-matrix/<suite>); FLAKE_MIRROR, the Debian mirror (by
# default the host's own).  Everything here needs root: as a normal user it
# goes through sudo (flake_root).  Nothing in a chroot starts a service, and
# proc and /dev/shm are mounted only while a command runs there.  One run at
# a time per chroot: a run unmounts them when it ends.

FLAKE_MATRIX_DIR=${FLAKE_MATRIX_DIR:-/var/cache/flake-matrix}

# The Debian suite that ships PostgreSQL $1 (none has 13, 14 or 16).
flake_chroot_suite() {
	case $1 in
		15) echo bookworm ;;
		17) echo trixie ;;
		18) echo forky ;;
		19) echo sid ;;			# with postgresql-19 from experimental
		*) flake_die "no Debian suite ships PostgreSQL $1 (known: 15 17 18 19)" ;;
	esac
}

flake_chroot_dir() {
	local suite
	suite=$(flake_chroot_suite "$1") || return 1
	echo "$FLAKE_MATRIX_DIR/$suite"
}

# The host's Debian mirror, as its apt sources name it.
flake_chroot_mirror() {
	local uri
	if [ -n "${FLAKE_MIRROR:-}" ]; then
		echo "$FLAKE_MIRROR"
		return
	fi
	uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -oE '(https?|file)://[^ ]*/debian/?( |$)' | head -1 | tr -d ' ')
	echo "${uri:-http://deb.debian.org/debian}"
}

# Mount proc and a tmpfs on /dev/shm (PostgreSQL's dynamic shared memory)
# in chroot $1, unless mounted already; /dev/fd (bash's process
# substitution) points into proc.
flake_chroot_mount() {
	local dir=$1
	[ -L "$dir/dev/fd" ] || [ -e "$dir/dev/fd" ] || flake_root ln -s /proc/self/fd "$dir/dev/fd"
	mountpoint -q "$dir/proc" || flake_root mount -t proc proc "$dir/proc" || return 1
	flake_root mkdir -p "$dir/dev/shm"
	mountpoint -q "$dir/dev/shm" || flake_root mount -t tmpfs -o mode=1777,size=512m shm "$dir/dev/shm"
}

# Unmount whatever is mounted under chroot $1, deepest first; a busy mount
# is detached lazily rather than left behind.
flake_chroot_umount() {
	local dir mnt
	dir=$(readlink -f "$1" 2>/dev/null) || return 0
	[ -n "$dir" ] && [ "$dir" != / ] || return 0
	awk -v d="$dir/" 'index($2 "/", d) == 1 { print $2 }' /proc/self/mounts | sort -r |
		while read -r mnt; do
			flake_root umount "$mnt" 2>/dev/null || flake_root umount -l "$mnt"
		done
}

# Run a command as root in chroot $1, with proc and /dev/shm mounted for the
# duration, and a plain environment.
flake_chroot_run() {
	local dir=$1 rc
	shift
	flake_chroot_mount "$dir" || { flake_chroot_umount "$dir"; return 1; }
	flake_root chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive "$@"
	rc=$?
	flake_chroot_umount "$dir"
	return $rc
}

# Write file $2 (relative to chroot $1) from standard input.
flake_chroot_write() {
	flake_root mkdir -p "$(dirname "$1/$2")"
	flake_root tee "$1/$2" >/dev/null
}

flake_chroot_packages() {
	echo "make gcc libc6-dev libipc-run-perl libfaketime postgresql-$1 postgresql-server-dev-$1"
}

# Whether the chroot for PostgreSQL $1 is complete: its marker file names
# the packages it was set up with.
flake_chroot_ready() {
	[ "$(cat "$(flake_chroot_dir "$1")/.flake-chroot" 2>/dev/null)" = "$(flake_chroot_packages "$1")" ]
}

# Debootstrap Debian suite $2 into $1, starting over an unfinished earlier
# attempt, and set it up for PostgreSQL's packages: apt installs no
# recommends and takes Release files past their Valid-Until (the mirror's
# testing and unstable may be), and nothing starts in it (no service, no
# default cluster).  Its apt sources are the caller's to write.
flake_chroot_bootstrap() {
	local dir=$1 suite=$2 mirror script log
	mirror=$(flake_chroot_mirror)
	flake_ensure_packages debootstrap
	flake_chroot_umount "$dir"
	flake_root rm -rf --one-file-system "$dir"
	flake_root mkdir -p "$(dirname "$dir")"
	# bookworm's debootstrap knows no suite newer than trixie; sid's script
	# fits them all.
	script=/usr/share/debootstrap/scripts/$suite
	[ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
	log=$(mktemp)
	flake_root debootstrap --variant=minbase "$suite" "$dir" "$mirror" "$script" >"$log" 2>&1 ||
		{ tail -30 "$log"; rm -f "$log"; flake_chroot_umount "$dir"; flake_die "debootstrap $suite failed"; }
	rm -f "$log"
	flake_chroot_umount "$dir"	# debootstrap's own mounts, if any are left
	printf '%s\n' 'Acquire::Check-Valid-Until "false";' 'APT::Install-Recommends "false";' |
		flake_chroot_write "$dir" etc/apt/apt.conf.d/99flake
	printf '#!/bin/sh\nexit 101\n' | flake_chroot_write "$dir" usr/sbin/policy-rc.d
	flake_root chmod 755 "$dir/usr/sbin/policy-rc.d"
	echo "create_main_cluster = false" |
		flake_chroot_write "$dir" etc/postgresql-common/createcluster.d/flake.conf
}

# The apt sources of Debian suite $1: for a stable one with its updates and
# its security updates.
flake_chroot_sources() {
	local suite=$1 mirror
	mirror=$(flake_chroot_mirror)
	echo "deb $mirror $suite main"
	case $suite in
		bookworm | trixie)
			echo "deb $mirror $suite-updates main"
			case $mirror in
				*/debian | */debian/) echo "deb ${mirror%/debian*}/debian-security $suite-security main" ;;
			esac
			;;
	esac
}

# Make the chroot for PostgreSQL $1, or reuse it.
flake_chroot_ensure() {
	local major=$1 suite dir pkgs
	suite=$(flake_chroot_suite "$major") || return 1
	dir=$(flake_chroot_dir "$major")
	pkgs=$(flake_chroot_packages "$major")
	flake_chroot_ready "$major" && return 0
	echo "flake: setting up $dir (Debian $suite, PostgreSQL $major) from $(flake_chroot_mirror)"
	flake_chroot_bootstrap "$dir" "$suite"
	{
		flake_chroot_sources "$suite"
		[ "$major" != 19 ] || echo "deb $(flake_chroot_mirror) experimental main"
	} | flake_chroot_write "$dir" etc/apt/sources.list

	local install=$pkgs
	# experimental: only PostgreSQL itself and libpq; the rest of it (a
	# newer Perl, for one) would break the install.
	[ "$major" = 19 ] && install="${pkgs/postgresql-19 postgresql-server-dev-19/} postgresql-19/experimental postgresql-server-dev-19/experimental libpq5/experimental libpq-dev/experimental"
	flake_chroot_run "$dir" sh -c "apt-get update -qq && apt-get install -y -qq $install >/dev/null && apt-get clean" ||
		flake_die "installing PostgreSQL $major in $dir failed"
	echo "$pkgs" | flake_chroot_write "$dir" .flake-chroot
	echo "flake: $dir ready"
}

# Copy the tree at $1 into chroot $2 as /build/flake: the files git knows of
# (tracked, or new and not ignored) in a git checkout, else all of them.
flake_chroot_put_tree() {
	local top=$1 dir=$2
	flake_root rm -rf --one-file-system "$dir/build/flake"
	flake_root mkdir -p "$dir/build/flake"
	if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		(cd "$top" && git ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
			tar --null -T - -cf -)
	else
		tar -C "$top" -cf - .
	fi | flake_root tar -C "$dir/build/flake" -xf -
}

# Copy the tree at $1 into the chroot of PostgreSQL $2 as /build/flake
# (flake_chroot_put_tree), then make clean there, so that nothing built on
# the host for another major is taken for up to date.
flake_chroot_copy_tree() {
	local top=$1 major=$2 dir
	dir=$(flake_chroot_dir "$major")
	flake_chroot_put_tree "$top" "$dir" &&
		flake_chroot_run "$dir" make -s -C /build/flake clean \
			PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" >/dev/null
}
