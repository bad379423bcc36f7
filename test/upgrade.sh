# shellcheck shell=bash
# Shell helpers of the upgrade checks (test/check-pg-upgrade,
# test/check-upgradecluster), sourced: a database with ids of every family
# and a rekey, the SQL that issues ids and counts those issued again, and
# the frozen clock of their servers.
#
# A database of the checks has the table ids (phase, family, id), and three
# tables of 2,000 rows with the same times, orders, invoices and receipts:
# the first server rekeys orders (flake_migrate, node 1016 of the suite's
# flake.rekey_nodes), each later one another table of the same times, which
# must take another node.

upgrade_libfaketime() {
	local lib
	for lib in /usr/lib/*/faketime/libfaketime.so.1; do
		[ -e "$lib" ] && echo "$lib" && return 0
	done
	echo "libfaketime is missing (Debian package libfaketime)" >&2
	return 1
}

# The SQL that creates the database's objects, the extension at version $1
upgrade_setup_sql() {
	cat <<-EOF
		CREATE EXTENSION flake VERSION '$1';
		CREATE TABLE ids (phase text NOT NULL, family text NOT NULL, id bigint NOT NULL);
		CREATE TABLE orders (id serial PRIMARY KEY, at timestamptz NOT NULL);
		INSERT INTO orders (at) SELECT '2020-01-01'::timestamptz + n * interval '1 min' FROM generate_series(1, 2000) n;
		CREATE TABLE invoices (id serial PRIMARY KEY, at timestamptz NOT NULL);
		INSERT INTO invoices (at) SELECT at FROM orders ORDER BY id;
		CREATE TABLE receipts (id serial PRIMARY KEY, at timestamptz NOT NULL);
		INSERT INTO receipts (at) SELECT at FROM orders ORDER BY id;
	EOF
}

# 20,000 ids of each family, of phase $1
upgrade_generate_sql() {
	cat <<-EOF
		INSERT INTO ids SELECT '$1', 'flake', flake_next() FROM generate_series(1, 20000);
		INSERT INTO ids SELECT '$1', 'ulidflake', ulidflake_next()::bigint FROM generate_series(1, 20000);
		INSERT INTO ids SELECT '$1', 'randflake', randflake_next() FROM generate_series(1, 20000);
	EOF
}

# Rekey table $1 (1 row: its rekeys)
upgrade_rekey_sql() {
	echo "SELECT count(*) FROM flake_migrate('$1', rekey_from => 'at') WHERE action = 'rekey';"
}

# Of each family, the ids of phase $1 that equal an id of another phase,
# of those of phase $1: "flake 0 of 20000, randflake 0 of 20000, ulidflake
# 0 of 20000"
upgrade_reissued_sql() {
	cat <<-EOF
		SELECT string_agg(format('%s %s of %s', family, reissued, issued), ', ' ORDER BY family) FROM (
			SELECT a.family, count(*) AS issued, count(b.id) AS reissued
			FROM ids a LEFT JOIN (SELECT DISTINCT family, id FROM ids WHERE phase <> '$1') b USING (family, id)
			WHERE a.phase = '$1' GROUP BY a.family) s;
	EOF
}

# The nodes of the ids of tables $@, and the ids two of them have in common:
# "orders 1016, invoices 1017; 0 in common"
upgrade_nodes_sql() {
	local table nodes='' union=''
	for table in "$@"; do
		nodes+="${nodes:+ || ', ' || }'$table ' || (SELECT string_agg(DISTINCT flake_node(id)::text, ',') FROM $table)"
		union+="${union:+ UNION ALL }SELECT id FROM $table"
	done
	echo "SELECT $nodes || '; ' || (SELECT count(*) FROM (SELECT id FROM ($union) a GROUP BY id HAVING count(*) > 1) d) || ' in common';"
}

# Debian's 15.20 and 17.12 (security updates) give every column the option
# pg_attver, which their pg_dump leaves out; an 18 older than that copies
# it, and its server refuses it when pg_upgrade or a dump restores the
# schema.  Whether that is so from the bin directory $1 to $2
upgrade_needs_attver_strip() {
	grep -q pg_attver "$1/postgres" && ! grep -q pg_attver "$2/pg_dump"
}

# The SQL that takes the option out of a database's columns, as their own
# pg_dump does
upgrade_attver_strip_sql() {
	cat <<-'EOF'
		UPDATE pg_attribute SET attoptions = nullif(array(
			SELECT o FROM unnest(attoptions) o WHERE o NOT LIKE 'pg_attver=%'), '{}')
		WHERE array_to_string(attoptions, ',') LIKE '%pg_attver=%';
	EOF
}
