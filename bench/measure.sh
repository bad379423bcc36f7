# Shell helpers of the benchmarks that run pgbench (sourced by bench/run and
# bench/sharing, after tools/lib.sh): one pgbench run measured beside its
# throughput by figures that other load on the machine sways far less.
#
# bench_pgbench ARGS...  runs pgbench ARGS as the server's user against the
# cluster FLAKE_CLUSTER, with no other client connected, and sets
#   BENCH_OUTPUT   what pgbench printed
#   BENCH_TPS      transactions per second
#   BENCH_CPU_US   the backends' CPU time (user + system) a transaction, in
#                  microseconds: that of the postmaster's children that
#                  exited meanwhile, which are pgbench's backends (and any
#                  autovacuum worker: turn autovacuum off)
#   BENCH_CLIENT_US  pgbench's own CPU time a transaction
#   BENCH_OTHERS   cores kept busy meanwhile by every other process on the
#                  machine (and by the hypervisor, as steal time)
#   BENCH_LOAD     the 1-minute load average at the end
# The CPU times come from /proc, in clock ticks (usually 10 ms): over a run
# of seconds that is well under a percent.  Fails the script if pgbench
# fails.

# CPU clock ticks: the postmaster's exited children; the postmaster and its
# live children (the server's own processes); the whole machine's busy time
bench_ticks_reaped() {
	awk '{ print $16 + $17 }' "/proc/$1/stat"
}
bench_ticks_server() {
	local pid total=0
	for pid in "$1" $(pgrep -P "$1"); do
		total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)))
	done
	echo "$total"
}
bench_ticks_busy() {
	# user nice system idle iowait irq softirq steal
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

# Until no client backend of postmaster $1 is left (those of psql or pgbench
# just finished), at most 10 s
bench_wait_clients_gone() {
	local _
	for _ in $(seq 1 200); do
		pgrep -P "$1" -f '\[local\]|127\.0\.0\.1' >/dev/null || return 0
		sleep 0.05
	done
}

bench_pgbench() {
	local pm hz reaped0 server0 busy0 t0 reaped1 server1 busy1 t1 client n
	pm=$(head -1 "$FLAKE_CLUSTER/data/postmaster.pid")
	hz=$(getconf CLK_TCK)
	bench_wait_clients_gone "$pm"
	reaped0=$(bench_ticks_reaped "$pm")
	server0=$(bench_ticks_server "$pm")
	busy0=$(bench_ticks_busy)
	t0=$(date +%s.%N)
	# pgbench's CPU time: its shell's children's, once it has exited
	BENCH_OUTPUT=$(flake_as_pg_user bash -c 'pgbench "$@" 2>&1 && echo "client ticks $(awk "{ print \$16 + \$17 }" /proc/$$/stat)"' \
		pgbench "$@") || { echo "$BENCH_OUTPUT" >&2; flake_die "pgbench failed"; }
	t1=$(date +%s.%N)
	bench_wait_clients_gone "$pm"
	reaped1=$(bench_ticks_reaped "$pm")
	server1=$(bench_ticks_server "$pm")
	busy1=$(bench_ticks_busy)
	client=$(echo "$BENCH_OUTPUT" | sed -n 's/^client ticks //p')
	n=$(echo "$BENCH_OUTPUT" | sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p')
	BENCH_TPS=$(echo "$BENCH_OUTPUT" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | tail -1)
	[ -n "$BENCH_TPS" ] && [ "${n:-0}" -gt 0 ] || { echo "$BENCH_OUTPUT" >&2; flake_die "no tps in pgbench output"; }
	read -r BENCH_CPU_US BENCH_CLIENT_US BENCH_OTHERS < <(awk -v hz="$hz" -v n="$n" -v t0="$t0" -v t1="$t1" \
		-v reaped=$((reaped1 - reaped0)) -v server=$((server1 - server0)) -v client="$client" -v busy=$((busy1 - busy0)) \
		-v ncores="$(nproc)" 'BEGIN {
			others = (busy - reaped - server - client) / hz / (t1 - t0)
			printf "%.3f %.3f %.3f\n", reaped / hz / n * 1e6, client / hz / n * 1e6, (others > 0) ? others : 0
		}')
	BENCH_LOAD=$(cut -d' ' -f1 /proc/loadavg)
}

# "median (lowest-highest)" of the numbers on standard input, in format $1
bench_spread() {
	sort -g | awk -v f="$1" '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf f " (" f "-" f ")", m, v[1], v[NR]
	}'
}
