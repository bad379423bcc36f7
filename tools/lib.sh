# Shell helpers shared by make test, make demo and make bench.
#
# PostgreSQL refuses to run as root, so as root the servers and test runners
# run as the "postgres" user that Debian's packages create, in directories
# that user owns.  As a normal user they run as that user, and sudo is used
# only for apt-get and for installing into PostgreSQL's directories.

#
# The PostgreSQL a target builds and runs against (make demo, test, bench,
# bench-migrate, bench-online, check-citus; make packages for the host's
# package): the installation of PG_CONFIG when it is set, else Debian's
# postgresql-$PG_MAJOR, by default the major of this Debian suite (15 on
# bookworm).  flake_select_pg sets PG_MAJOR and FLAKE_PG_CONFIG from them.
# make matrix and make packages take the list PG_MAJORS.

FLAKE_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The version flake.control makes the default: of the tree's, of file $1,
# or with "-" of the control file's text on standard input.
flake_control_version() {
	sed -n "s/^default_version = '\(.*\)'/\1/p" "${1:-$FLAKE_TOP/flake.control}"
}

flake_die() {
	echo "flake: $*" >&2
	exit 1
}

# Run a command as root: directly, or through sudo.
flake_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		flake_die "needs root for: $* (run it as root, or install sudo)"
	fi
}

# Install the Debian packages named that are missing.
#
# Debian's postgresql-NN creates the cluster NN/main when it is installed
# first, and starts it on port 5432.  The scripts start servers of their
# own, so they install it without that cluster: postgresql-common reads
# create_main_cluster from createcluster.d, where a file says "false" for
# the duration of the install, and is removed again.  Nothing then runs
# that the user did not have, and nothing of it stays configured.
FLAKE_NO_MAIN_CLUSTER=/etc/postgresql-common/createcluster.d/zz-flake-no-main-cluster.conf
flake_ensure_packages() {
	local missing=() pkg servers=() rc=0
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
			missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	for pkg in "${missing[@]}"; do
		[[ $pkg =~ ^postgresql-[0-9]+$ ]] && servers+=("${pkg#postgresql-}/main")
	done
	echo "flake: installing ${missing[*]}"
	if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
		flake_die "missing packages; run: apt-get update && apt-get install -y ${missing[*]}"
	fi
	if [ ${#servers[@]} -gt 0 ]; then
		flake_root mkdir -p "$(dirname "$FLAKE_NO_MAIN_CLUSTER")" &&
			echo "create_main_cluster = false   # while make demo/test installs PostgreSQL" |
			flake_root tee "$FLAKE_NO_MAIN_CLUSTER" >/dev/null ||
			flake_die "could not write $FLAKE_NO_MAIN_CLUSTER"
	fi
	# interrupted, it still removes the file before it stops
	trap 'rc=1' INT TERM HUP
	flake_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq &&
		flake_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${missing[@]}" >/dev/null ||
		rc=1
	trap - INT TERM HUP
	[ ${#servers[@]} -eq 0 ] || flake_root rm -f "$FLAKE_NO_MAIN_CLUSTER"
	[ "$rc" -eq 0 ] || flake_die "apt-get install ${missing[*]} failed"
	[ ${#servers[@]} -eq 0 ] ||
		echo "flake: installed without Debian's default cluster ${servers[*]}, so no server of it runs; to have one: sudo pg_createcluster ${servers[0]%/main} main --start"
}

# The major of Debian's "postgresql" package in this machine's apt sources.
flake_debian_major() {
	apt-cache depends postgresql 2>/dev/null | sed -n 's/^ *Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | head -1
}

# Whether apt can install postgresql-$1 here (installed already, or known
# to the package lists, read once if there are none yet).
flake_apt_has_major() {
	local pkg
	for pkg in "postgresql-$1" "postgresql-server-dev-$1"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" && continue
		if ! ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1; then
			flake_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || return 1
		fi
		apt-cache show "$pkg" >/dev/null 2>&1 || return 1
	done
}

# Choose the PostgreSQL to build against (see above): sets PG_MAJOR and
# FLAKE_PG_CONFIG, says which it is, and stops with where to get a major
# that apt here does not have.
flake_select_pg() {
	local version
	if [ -n "${PG_CONFIG:-}" ]; then
		command -v "$PG_CONFIG" >/dev/null 2>&1 || flake_die "PG_CONFIG=$PG_CONFIG: no such program"
		FLAKE_PG_CONFIG=$(command -v "$PG_CONFIG")
		version=$("$FLAKE_PG_CONFIG" --version) || flake_die "$FLAKE_PG_CONFIG --version failed"
		version=${version#PostgreSQL }
		if [ -n "${PG_MAJOR:-}" ] && [ "$PG_MAJOR" != "${version%%[.a-z]*}" ]; then
			flake_die "PG_MAJOR=$PG_MAJOR, but PG_CONFIG=$PG_CONFIG is PostgreSQL $version: set one of them"
		fi
		PG_MAJOR=${version%%[.a-z]*}
		[ -e "$("$FLAKE_PG_CONFIG" --includedir-server)/postgres.h" ] ||
			flake_die "PostgreSQL $version of $FLAKE_PG_CONFIG has no server headers ($("$FLAKE_PG_CONFIG" --includedir-server)/postgres.h): install its development files"
		echo "flake: using PostgreSQL $version of PG_CONFIG=$FLAKE_PG_CONFIG"
	else
		PG_MAJOR=${PG_MAJOR:-$(flake_debian_major)}
		PG_MAJOR=${PG_MAJOR:-15}
		FLAKE_PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
		flake_apt_has_major "$PG_MAJOR" ||
			flake_die "PostgreSQL $PG_MAJOR is not in this machine's apt sources$(flake_debian_major_note).
  Get it from apt.postgresql.org (PGDG, https://wiki.postgresql.org/wiki/Apt), which has every
  supported major, and run this again; or point PG_CONFIG at the pg_config of an installation
  of it$(flake_chroot_note "$PG_MAJOR")."
		echo "flake: using Debian's PostgreSQL $PG_MAJOR ($FLAKE_PG_CONFIG)"
	fi
	export PG_MAJOR
}

# Where make matrix has a chroot for major $1: how to test on it there.
flake_chroot_note() {
	local suite
	suite=$( (. "$FLAKE_TOP/tools/chroot.sh" && flake_chroot_suite "$1") 2>/dev/null) || return 0
	echo "; or test on it in make matrix's Debian $suite chroot: PG_MAJORS=$1 make matrix"
}

flake_debian_major_note() {
	local major suite
	major=$(flake_debian_major)
	suite=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	[ -n "$major" ] && echo " (Debian${suite:+ $suite} has PostgreSQL $major)"
}

# What the build needs from apt: the compiler, and PostgreSQL with its
# development files unless PG_CONFIG names an installation.
flake_build_packages() {
	if [ -n "${PG_CONFIG:-}" ]; then
		echo make gcc
	else
		echo make gcc "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR"
	fi
}

# pg_bsd_indent 2.1.1, which make check-indent lays out the sources with,
# where the Debian suite has it (bookworm; later suites have only the
# newer one of PostgreSQL's server-dev packages, and the check skips).
flake_indent_packages() {
	apt-cache show pg-bsd-indent >/dev/null 2>&1 && echo pg-bsd-indent
}

# Stop before make install overwrites files of a package (postgresql-NN-flake
# installed from a .deb): dpkg would then report them changed, and removing
# the package would remove the build installed over it.
flake_refuse_packaged() {
	local pg_config=$1 path owner
	command -v dpkg-query >/dev/null 2>&1 || return 0
	for path in "$("$pg_config" --pkglibdir)/flake.so" "$("$pg_config" --sharedir)/extension/flake.control" \
		"$("$pg_config" --bindir)/flake_migrate_online"; do
		owner=$(dpkg-query -S "$path" 2>/dev/null | sed -n '1s/^\([^:,]*\)[:,].*/\1/p') || true
		[ -z "$owner" ] || flake_die "$path belongs to the package $owner, which make install would overwrite.
  Remove it first (sudo apt-get remove $owner), or build against another installation
  (PG_CONFIG=/path/to/pg_config)."
	done
}

# Build and install the extension into the directories of the PostgreSQL
# flake_select_pg chose.  Arguments are make variables for both
# (FLAKE_ASSERT=1 ...: see Makefile).
flake_build_install() {
	local pg_config=$FLAKE_PG_CONFIG
	flake_refuse_packaged "$pg_config"
	echo "flake: building flake${*:+ ($*)} for PostgreSQL $PG_MAJOR and installing it into $("$pg_config" --pkglibdir) ..."
	make -s -C "$FLAKE_TOP" PG_CONFIG="$pg_config" "$@" || flake_die "build failed"
	if [ -w "$($pg_config --pkglibdir)" ] && [ -w "$($pg_config --sharedir)/extension" ]; then
		make -s -C "$FLAKE_TOP" PG_CONFIG="$pg_config" "$@" install
	else
		flake_root make -s -C "$FLAKE_TOP" PG_CONFIG="$pg_config" "$@" install
	fi || flake_die "install failed"
	export PATH="$($pg_config --bindir):$PATH"
}

# The user that runs servers: postgres when we are root, else ourselves.
flake_pg_user() {
	if [ "$(id -u)" -eq 0 ]; then
		id postgres >/dev/null 2>&1 || flake_die "user postgres is missing (it comes with Debian's postgresql packages)"
		echo postgres
	else
		id -un
	fi
}

# Run a command as that user.  As root, from /tmp: postgres may not enter root's working directory
# (/root/flake), and initdb, pg_ctl and psql would each say so.  Callers
# pass absolute paths.
flake_as_pg_user() {
	if [ "$(id -u)" -eq 0 ]; then
		(cd /tmp && runuser -u postgres -- env HOME=/tmp PATH="$PATH" "$@")
	else
		"$@"
	fi
}

# A fresh directory owned by the server user.
flake_tmpdir() {
	local dir
	dir=$(mktemp -d "/tmp/flake-$1.XXXXXX")
	chown "$(flake_pg_user)" "$dir"
	echo "$dir"
}

# Start a throwaway cluster with flake preloaded, listening only on a Unix
# socket in its own directory; it is stopped and removed when the shell exits.
# Lines on standard input, if any, are added to its postgresql.conf.
flake_cluster_start() {
	FLAKE_CLUSTER=$(flake_tmpdir "$1")
	trap flake_cluster_stop EXIT
	flake_as_pg_user initdb -D "$FLAKE_CLUSTER/data" -A trust -E UTF8 --no-locale >"$FLAKE_CLUSTER/initdb.log" 2>&1 ||
		{ cat "$FLAKE_CLUSTER/initdb.log"; flake_die "initdb failed"; }
	[ -t 0 ] || cat >>"$FLAKE_CLUSTER/data/postgresql.conf"
	flake_as_pg_user pg_ctl -D "$FLAKE_CLUSTER/data" -l "$FLAKE_CLUSTER/server.log" -w \
		-o "-c listen_addresses='' -c unix_socket_directories='$FLAKE_CLUSTER' -c shared_preload_libraries=flake ${2:-}" \
		start >/dev/null ||
		{ cat "$FLAKE_CLUSTER/server.log"; flake_die "server did not start"; }
	export PGHOST=$FLAKE_CLUSTER PGDATABASE=postgres
}

flake_cluster_stop() {
	[ -n "${FLAKE_CLUSTER:-}" ] || return 0
	flake_as_pg_user pg_ctl -D "$FLAKE_CLUSTER/data" -m fast -w stop >/dev/null 2>&1
	rm -rf "$FLAKE_CLUSTER"
	FLAKE_CLUSTER=
}

flake_psql() {
	flake_as_pg_user psql -X -v ON_ERROR_STOP=1 "$@"
}
