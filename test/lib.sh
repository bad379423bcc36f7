# Shell helpers shared by make test, make demo and make bench.
#
# PostgreSQL refuses to run as root, so as root the servers and test runners
# run as the "postgres" user that Debian's packages create, in directories
# that user owns.  As a normal user they run as that user, and sudo is used
# only for apt-get and for installing into PostgreSQL's directories.

FLAKE_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_MAJOR=${PG_MAJOR:-15}

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
flake_ensure_packages() {
	local missing=() pkg
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
			missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "flake: installing ${missing[*]}"
	if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
		flake_die "missing packages; run: apt-get update && apt-get install -y ${missing[*]}"
	fi
	flake_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		flake_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
		flake_die "apt-get install ${missing[*]} failed"
}

flake_build_packages() {
	echo make gcc "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR"
}

# pg_bsd_indent 2.1.1, which make check-indent lays out the sources with,
# where the Debian suite has it (bookworm; later suites have only the
# newer one of PostgreSQL's server-dev packages, and the check skips).
flake_indent_packages() {
	apt-cache show pg-bsd-indent >/dev/null 2>&1 && echo pg-bsd-indent
}

# Build and install the extension into PostgreSQL's directories: those of
# $PG_CONFIG when set (another installation), else of Debian's $PG_MAJOR.
# Arguments are make variables for both (FLAKE_ASSERT=1 ...: see Makefile).
flake_build_install() {
	local pg_config=${PG_CONFIG:-/usr/lib/postgresql/$PG_MAJOR/bin/pg_config}
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

flake_as_pg_user() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env HOME=/tmp PATH="$PATH" "$@"
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
