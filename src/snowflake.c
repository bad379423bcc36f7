/*-------------------------------------------------------------------------
 *
 * snowflake.c
 *	  flake_next(): Snowflake ids on leased or explicit nodes, and decoding.
 *
 * An id is  0 | timestamp | node | sequence,  with flake.node_bits and
 * flake.sequence_bits low bits (10 and 12 by default, the Discord and
 * katsubushi layout) and milliseconds since flake.epoch above them.
 *
 * Each node's last issued (timestamp, sequence) is one atomic word in shared
 * memory, advanced by compare-and-swap, so any mix of leased and explicit
 * callers on one node gets distinct, increasing ids, and a backend on its
 * own leased node takes no lock.  When there are more generating backends
 * than nodes in flake.nodes, the later ones share the least shared nodes
 * (see lease.c) for the same reason, rather than fail.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "citus.h"
#include "clock.h"
#include "horizon.h"
#include "hwm.h"
#include "layout.h"
#include "lease.h"
#include "settings.h"
#include "shmem.h"
#include "snowflake.h"
#include "snowflake_settings.h"

/*
 * Every node of the node space, in shared memory (see snowflake_add_shmem),
 * or NULL when flake is not preloaded.
 */
static FlakeNodePadded *nodes = NULL;

/* This backend's leased node, or -1. */
static int	leased_node = -1;

/* Whether this backend has seen the settings' layout accepted. */
static bool layout_accepted = false;

/*
 * On Citus, with flake.nodes left empty, each group leases from a share of
 * SNOWFLAKE_CITUS_SHARE_BITS nodes (16: 64 groups with the default 10 node
 * bits): see citus.c.
 */
#define SNOWFLAKE_CITUS_SHARE_BITS	4

PG_FUNCTION_INFO_V1(flake_next);
PG_FUNCTION_INFO_V1(flake_next_node);
PG_FUNCTION_INFO_V1(flake_node);
PG_FUNCTION_INFO_V1(flake_timestamp);
PG_FUNCTION_INFO_V1(flake_node_of);
PG_FUNCTION_INFO_V1(flake_sequence);
PG_FUNCTION_INFO_V1(flake_decode);
PG_FUNCTION_INFO_V1(flake_from_timestamp);
PG_FUNCTION_INFO_V1(flake_horizon);
PG_FUNCTION_INFO_V1(flake_upper_bound);

/*
 * Milliseconds since flake.epoch as a timestamptz.  With few node and
 * sequence bits, ids reach beyond PostgreSQL's timestamps (294276 AD):
 * returns false for those.
 */
static bool
ms_to_timestamptz(int64 ms, TimestampTz *result)
{
	/* ms < 2^63 less the epoch, which is not in the future: no overflow */
	int64		unix_ms = snowflake_epoch_unix_ms + ms;

	if (unix_ms >= END_TIMESTAMP / 1000 + FLAKE_PG_EPOCH_UNIX_MS)
		return false;
	*result = flake_unix_ms_to_timestamptz(unix_ms);
	return true;
}

/* The last millisecond of the layout, or of PostgreSQL's timestamps. */
static const char *
layout_end_text(void)
{
	TimestampTz end;

	if (!ms_to_timestamptz(snowflake_max_timestamp(), &end))
		end = END_TIMESTAMP - 1;
	return pstrdup(timestamptz_to_str(end));
}

static void
timestamp_overflow(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("flake_next() timestamp overflow"),
			 errdetail("With flake.id_bits = %d, flake.node_bits = %d and flake.sequence_bits = %d, ids hold %d bits of milliseconds since flake.epoch, which ran out at %s.",
					   snowflake_id_bits, snowflake_node_bits, snowflake_sequence_bits,
					   snowflake_timestamp_bits(), layout_end_text())));
}

static Size
nodes_size(void)
{
	return mul_size(sizeof(FlakeNodePadded), (Size) 1 << snowflake_node_bits);
}

static void
mark_leasable(int64 lo, int64 hi, void *arg)
{
	for (int64 n = lo; n <= hi; n++)
		nodes[n].node.id = (int32) n;
}

/*
 * Raise every node (leasable or not, for flake_next(node)) to the last
 * sequence of the mark's millisecond, so that its next id is above every
 * id issued before.
 */
static void
raise_nodes(const FlakeMarks *marks)
{
	/* a mark past the layout's end (another epoch?) must not wrap */
	int64		ms = Min(marks->mark[FLAKE_HWM_SNOWFLAKE] - snowflake_epoch_unix_ms,
						 snowflake_max_timestamp() + 1);
	uint64		floor;

	if (ms < 0)
		return;
	floor = ((uint64) ms << snowflake_sequence_bits) |
		(((uint64) 1 << snowflake_sequence_bits) - 1);
	for (int i = 0; i < (1 << snowflake_node_bits); i++)
		flake_raise_last(&nodes[i].node.last, floor);
}

static void
nodes_startup(void *part, bool fresh, const FlakeMarks *marks)
{
	nodes = (FlakeNodePadded *) part;
	if (!fresh)
		return;
	for (int i = 0; i < (1 << snowflake_node_bits); i++)
		flake_node_init(&nodes[i].node, -1);
	flake_nodes_foreach(snowflake_nodes_string, snowflake_node_bits,
						mark_leasable, NULL);
	raise_nodes(marks);
}

static const FlakeShmemPart nodes_part = {
	.name = "flake snowflake nodes",
	.size = nodes_size,
	.startup = nodes_startup,
	.raise = raise_nodes,
};

/* From _PG_init, while shared_preload_libraries are loaded. */
void
snowflake_add_shmem(void)
{
	flake_shmem_add_part(&nodes_part);
}

static TimestampTz
last_to_timestamptz(int64 ms)
{
	return flake_unix_ms_to_timestamptz(snowflake_epoch_unix_ms + ms);
}

/* The node space, for leasing and flake_leases; false if not preloaded. */
bool
snowflake_node_space(FlakeNodeSpace *space)
{
	if (nodes == NULL)
		return false;
	space->generator = "flake_next";
	space->first = &nodes[0].node;
	space->stride = sizeof(FlakeNodePadded);
	space->count = 1 << snowflake_node_bits;
	space->sequence_bits = snowflake_sequence_bits;
	space->to_timestamptz = last_to_timestamptz;
	return true;
}

/*
 * On Citus with flake.nodes empty, narrow the node space to the share of
 * this database's group.  The group is the one latched at the first call
 * of any generator in this backend.
 */
static void
snowflake_citus_share(FlakeNodeSpace *space)
{
	if (*snowflake_nodes_string == '\0')
		flake_lease_citus_share(space, snowflake_node_bits,
								SNOWFLAKE_CITUS_SHARE_BITS, "flake.nodes");
}

/*
 * The nodes of this server's Citus group, when flake_next() leases from
 * them (flake.nodes empty, preloaded, Citus in this database).
 */
static bool
snowflake_citus_nodes(int *first, int *count)
{
	FlakeNodeSpace space;

	if (*snowflake_nodes_string != '\0' || !snowflake_node_space(&space))
		return false;
	snowflake_citus_share(&space);
	if (space.count == 1 << snowflake_node_bits)
		return false;
	*first = space.first->id;
	*count = space.count;
	return true;
}

/*
 * Is node one of this server's own flake_next() nodes (of flake.nodes, or
 * of its Citus group's share)?  *own names them, for flake_guard()'s
 * message.
 */
bool
snowflake_own_node(int64 node, const char **own)
{
	return flake_lease_own_node(node, "flake.nodes", snowflake_nodes_string,
								snowflake_node_bits, snowflake_citus_nodes, own);
}

/* The layout of the settings. */
static void
settings_layout(FlakeLayout *layout)
{
	memset(layout, 0, sizeof(*layout));
	layout->epoch_unix_ms = snowflake_epoch_unix_ms;
	layout->id_bits = snowflake_id_bits;
	layout->node_bits = snowflake_node_bits;
	layout->sequence_bits = snowflake_sequence_bits;
}

/*
 * Compare the settings' layout with the recorded one, once per server
 * start; the caller holds flake's lock.  Without a record (a fresh server,
 * or one that ran a release before 1.5) the settings' layout is the one
 * that issued ids; a record flake.written says was written and that is
 * missing is lost, not absent.  A recorded layout may give way to another
 * where no id of the new one can equal or sort below one issued
 * (layout.c).  The layout accepted is recorded before any of its ids is
 * issued.
 */
static void
settle_layout(void)
{
	FlakeLayout current;
	int64		mark;

	settings_layout(&current);
	mark = (int64) pg_atomic_read_u64(&flake_shared->marks.value.mark[FLAKE_HWM_SNOWFLAKE]);
	if (!flake_shared->layout_read &&
		flake_shared->layout_problem.status == FLAKE_FILE_MISSING &&
		(flake_datafile_written(NULL) & FLAKE_WRITTEN_LAYOUT))
		flake_shared->layout_problem.status = FLAKE_FILE_LOST;
	if (!flake_shared->layout_read &&
		flake_shared->layout_problem.status != FLAKE_FILE_MISSING)
		flake_shared->layout_status = FLAKE_LAYOUT_REFUSED;
	else if (flake_shared->layout_read &&
			 flake_layout_equal(&flake_shared->layout, &current))
		flake_shared->layout_status = FLAKE_LAYOUT_ACCEPTED;
	else if (!flake_shared->layout_read || mark <= 0 ||
			 flake_layout_keeps_above(&flake_shared->layout, mark, &current))
	{
		flake_layout_record(&current);
		if (flake_shared->layout_read)
			ereport(LOG,
					(errmsg("flake_next() changes its layout to %s",
							flake_layout_text(&current)),
					 errdetail("Ids were issued with %s; every id of the new layout lies above them.",
							   flake_layout_text(&flake_shared->layout))));
		flake_shared->layout = current;
		flake_shared->layout_read = true;
		flake_shared->layout_status = FLAKE_LAYOUT_ACCEPTED;
	}
	else
		flake_shared->layout_status = FLAKE_LAYOUT_REFUSED;
}

/*
 * Refuse flake_next() where the settings lay ids out otherwise than the
 * layout that issued ids here, so that new ids could equal or sort below
 * issued ones; or where flake.layout cannot be read.  A backend passes
 * here until the layout is accepted, then never again.
 */
static void
check_layout(void)
{
	FlakeLayout recorded;
	FlakeLayout current;
	FlakeFileProblem problem;
	FlakeLayoutStatus status;
	int64		mark;
	char	   *mark_text;

	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	if (flake_shared->layout_status == FLAKE_LAYOUT_UNCHECKED)
		settle_layout();
	status = flake_shared->layout_status;
	recorded = flake_shared->layout;
	problem = flake_shared->layout_problem;
	mark = (int64) pg_atomic_read_u64(&flake_shared->marks.value.mark[FLAKE_HWM_SNOWFLAKE]);
	LWLockRelease(flake_shared->lock);
	if (status == FLAKE_LAYOUT_ACCEPTED)
	{
		layout_accepted = true;
		return;
	}
	settings_layout(&current);
	if (problem.status != FLAKE_FILE_OK && problem.status != FLAKE_FILE_MISSING)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 flake_datafile_errmsg(FLAKE_LAYOUT_FILE, &problem),
				 errdetail("It holds the layout that issued flake_next()'s ids; without it flake_next() cannot tell whether %s could issue them again.",
						   flake_layout_text(&current)),
				 errhint("Put back an intact copy of it and restart. Without one, where the settings are the layout this server issued its ids with, run SELECT flake_repair_state(newest) as a superuser (see \"Damaged state files\" in docs/guarantees.md).")));
	mark_text = pstrdup(timestamptz_to_str(flake_unix_ms_to_timestamptz(mark)));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("flake_next() refuses a layout that could issue ids again"),
			 errdetail("Ids were issued up to %s with %s; with %s, the settings now, ids from then on do not all lie above them.",
					   mark_text, flake_layout_text(&recorded),
					   flake_layout_text(&current)),
			 errhint("Set flake.epoch, flake.id_bits, flake.node_bits and flake.sequence_bits back to those values and restart. A layout may change only where its ids lie above every id issued, such as a larger flake.id_bits (see \"The layout\" in docs/guarantees.md).")));
}

/*
 * flake_repair_state(): where flake.layout cannot be read (damaged, or
 * lost), the operator states that the settings are the layout ids were
 * issued with; record it.  The caller holds flake's lock.  Whether there
 * was one to repair.
 */
bool
snowflake_repair_layout(void)
{
	FlakeLayout current;

	if (flake_shared->layout_read)
		return false;
	if (flake_shared->layout_problem.status == FLAKE_FILE_MISSING &&
		!(flake_datafile_written(NULL) & FLAKE_WRITTEN_LAYOUT))
		return false;
	/* an intact copy put back meanwhile: that is the record */
	if (flake_layout_read(FLAKE_LAYOUT_FILE, &flake_shared->layout,
						  &flake_shared->layout_problem))
	{
		flake_shared->layout_read = true;
		flake_shared->layout_status = FLAKE_LAYOUT_UNCHECKED;
		return true;
	}
	settings_layout(&current);
	flake_layout_record(&current);
	flake_shared->layout = current;
	flake_shared->layout_read = true;
	flake_shared->layout_problem.status = FLAKE_FILE_OK;
	flake_shared->layout_status = FLAKE_LAYOUT_ACCEPTED;
	ereport(LOG,
			(errmsg("flake_repair_state() recorded %s as the layout that issued flake_next()'s ids",
					flake_layout_text(&current))));
	return true;
}

/*
 * Before another server's state is taken over (flake_take_over()): refuse
 * where that server issued ids, up to its mark, in a layout (its
 * flake.layout) whose ids this server's settings do not all lie above.
 * A server before 1.5 recorded none: its layout is taken as this one's,
 * unless its flake.written says it had one.
 */
void
snowflake_check_other_layout(const char *directory, int64 mark_unix_ms)
{
	char		path[MAXPGPATH];
	FlakeLayout other;
	FlakeLayout current;
	FlakeFileProblem problem;
	char	   *mark_text;

	snprintf(path, sizeof(path), "%s/%s", directory, FLAKE_LAYOUT_FILE);
	settings_layout(&current);
	if (!flake_layout_read(path, &other, &problem))
	{
		if (problem.status == FLAKE_FILE_MISSING &&
			!(flake_datafile_written(directory) & FLAKE_WRITTEN_LAYOUT))
			return;
		if (problem.status == FLAKE_FILE_MISSING)
			problem.status = FLAKE_FILE_LOST;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 flake_datafile_errmsg(path, &problem),
				 errdetail("It holds the layout the other server issued flake_next()'s ids with; without it flake_next() cannot tell whether %s could issue them again.",
						   flake_layout_text(&current)),
				 errhint("Put back an intact copy of it, then take over.")));
	}
	if (mark_unix_ms <= 0 || flake_layout_equal(&other, &current) ||
		flake_layout_keeps_above(&other, mark_unix_ms, &current))
		return;
	mark_text = pstrdup(timestamptz_to_str(flake_unix_ms_to_timestamptz(mark_unix_ms)));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the server of data directory \"%s\" issued flake_next() ids in a layout this server's could issue again",
					directory),
			 errdetail("It issued ids up to %s with %s; with %s, this server's settings, ids from then on do not all lie above them.",
					   mark_text, flake_layout_text(&other),
					   flake_layout_text(&current)),
			 errhint("Give this server that server's flake.epoch, flake.id_bits, flake.node_bits and flake.sequence_bits, restart it, and take over again.")));
}

static void
release_lease(int code, Datum arg)
{
	if (leased_node >= 0)
		flake_release(&nodes[leased_node].node);
	leased_node = -1;
}

static void
lease_node(void)
{
	static bool release_registered = false;
	FlakeNodeSpace space;
	FlakeNode  *node;

	flake_refuse_in_recovery("flake_next()");
	if (!layout_accepted)
		check_layout();

	/* first, so that a failure here cannot strand a leased node */
	if (!release_registered)
	{
		before_shmem_exit(release_lease, (Datum) 0);
		release_registered = true;
	}

	/*
	 * flake.nodes always has a node ('' is the whole node space, or the Citus
	 * group's share of it), and held nodes are shared, so a node is always
	 * found.
	 */
	(void) snowflake_node_space(&space);
	snowflake_citus_share(&space);
	node = flake_lease(&space, NULL);
	Assert(node != NULL);
	leased_node = node->id;
}

/*
 * The clock's millisecond since flake.epoch, at most one past the layout's
 * end: a node raised to the end of the millisecond before it (the last id
 * of that millisecond) takes the clock's millisecond next.
 */
static int64
clock_ms_since_epoch(void)
{
	return Min(flake_clock_unix_ms() - snowflake_epoch_unix_ms,
			   snowflake_max_timestamp() + 1);
}

/*
 * Raise a node to the end of the clock's previous millisecond, as
 * flake_horizon() does: its next id takes the clock's millisecond anyway,
 * and its last id then tells the time of the ids to come, not that of an
 * idle node's last id (or flake.epoch, for a node that never issued).
 */
static void
raise_to_clock(FlakeNode *node)
{
	int64		now = clock_ms_since_epoch();

	if (now > 0)
		flake_raise_last(&node->last, ((uint64) now << snowflake_sequence_bits) - 1);
}

/*
 * A transaction's first id: hold the horizon at the time of the node's last
 * id, raised to the clock first, and return that last id.
 */
static pg_noinline uint64
hold_horizon(FlakeNode *node)
{
	uint64		last;

	raise_to_clock(node);
	last = pg_atomic_read_u64(&node->last);
	flake_horizon_start(FLAKE_HORIZON_SNOWFLAKE,
						(int64) (last >> snowflake_sequence_bits) + snowflake_epoch_unix_ms);
	return last;
}

/*
 * Issue the next id of a node.
 *
 * The next (timestamp, sequence) is the larger of the clock's millisecond
 * with sequence 0 and the node's last one plus one: a used-up sequence, a
 * clock that stepped back and a restart above the high-water mark all carry
 * on from the last id, into later milliseconds.  Running more than
 * flake.max_borrow ahead of the clock is not allowed: a node that got there
 * by load waits for the clock; a node that is further ahead than load can
 * explain (the clock went back) fails rather than drift.
 */
static int64
snowflake_generate(int node_id)
{
	FlakeNode  *node = &nodes[node_id].node;
	int			seq_bits = snowflake_sequence_bits;
	int64		max_ts = snowflake_max_timestamp();
	uint64		last = pg_atomic_read_u64(&node->last);
	uint64		next;
	int64		next_ts;

	/* every id below is at or above last's millisecond */
	if (unlikely(!flake_horizon_holding[FLAKE_HORIZON_SNOWFLAKE]))
		last = hold_horizon(node);
	for (;;)
	{
		int64		now = flake_clock_unix_ms() - snowflake_epoch_unix_ms;
		int64		ahead;

		if (unlikely(now < 0))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the system clock is before flake.epoch (%s)",
							snowflake_epoch_string)));

		/*
		 * Past the layout's end, the shift below would wrap.  last + 1 does
		 * not wrap: last holds a timestamp of at most max_ts + 1.
		 */
		if (unlikely(now > max_ts))
			timestamp_overflow();
		next = Max(last + 1, (uint64) now << seq_bits);
		next_ts = (int64) (next >> seq_bits);
		if (unlikely(next_ts > max_ts))
			timestamp_overflow();
		ahead = next_ts - now;

		if (unlikely(ahead > snowflake_max_borrow_ms &&
					 next_ts > (int64) (last >> seq_bits)))
		{
			if (ahead > snowflake_max_borrow_ms + FLAKE_HWM_CHUNK_MS)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("the system clock is " INT64_FORMAT " ms behind the last id of flake node %d",
								ahead, node_id),
						 errdetail("The clock went back (or the server restarted with an earlier clock). Ids continue from the last one issued, but at most flake.max_borrow (%d ms) ahead of the clock.",
								   snowflake_max_borrow_ms),
						 errhint("Check the server's time synchronization. Generation resumes when the clock catches up; a larger flake.max_borrow lets it continue sooner.")));
			/* used up by load: wait for the clock */
			pg_usleep(1000L);
			CHECK_FOR_INTERRUPTS();
			last = pg_atomic_read_u64(&node->last);
			continue;
		}

		flake_hwm_cover(&flake_shared->marks.value, flake_shared->lock,
						FLAKE_HWM_SNOWFLAKE, next_ts + snowflake_epoch_unix_ms);

		if (pg_atomic_compare_exchange_u64(&node->last, &last, next))
			break;
	}

	return (next_ts << (snowflake_node_bits + seq_bits)) |
		((int64) node_id << seq_bits) |
		(int64) (next & (((uint64) 1 << seq_bits) - 1));
}

Datum
flake_next(PG_FUNCTION_ARGS)
{
	FlakeNode  *node;
	int64		id;

	flake_require_shared();
	if (unlikely(leased_node < 0))
		lease_node();
	else if (unlikely(flake_citus_recheck))
		(void) flake_citus_read_group("flake_next");
	id = snowflake_generate(leased_node);

	/*
	 * The count is for flake_leases only: a sole holder updates it without a
	 * locked instruction, and a count taken while holders come and go may be
	 * off by the ids issued meanwhile.
	 */
	node = &nodes[leased_node].node;
	if (pg_atomic_read_u32(&node->holders) == 1)
		pg_atomic_write_u64(&node->issued, pg_atomic_read_u64(&node->issued) + 1);
	else
		pg_atomic_fetch_add_u64(&node->issued, 1);
	PG_RETURN_INT64(id);
}

/*
 * The hint of a node flake_next(node) may not take: the nodes this server
 * generates on (flake.nodes, or its Citus group's share), not the whole
 * node space, part of which flake.rekey_nodes or other servers hold.
 */
static char *
allowed_nodes_hint(void)
{
	FlakeNodeSpace space;

	if (*snowflake_nodes_string != '\0')
		return psprintf("Pass a node of flake.nodes (\"%s\"), the nodes this server generates on.",
						snowflake_nodes_string);
	if (snowflake_node_space(&space))
	{
		snowflake_citus_share(&space);
		if (space.count < (1 << snowflake_node_bits))
			return psprintf("Pass a node from %d to %d, the nodes this server's Citus group generates on.",
							space.first->id, space.first->id + space.count - 1);
	}
	return psprintf("Pass a node from 0 to %d, the nodes this server generates on (flake.node_bits = %d).",
					(1 << snowflake_node_bits) - 1, snowflake_node_bits);
}

Datum
flake_next_node(PG_FUNCTION_ARGS)
{
	int32		node = PG_GETARG_INT32(0);

	if (node < 0 || node >= (1 << snowflake_node_bits))
	{
		char	   *hint = allowed_nodes_hint();

		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("node %d is out of range for flake_next()", node),
				 errhint("%s", hint)));
	}
	flake_require_shared();
	flake_refuse_in_recovery("flake_next(node)");
	if (unlikely(!layout_accepted))
		check_layout();

	/*
	 * The nodes of flake.rekey_nodes are this server's, but its rekeys give
	 * their ids to existing rows: an id made on one now could be the one a
	 * later rekey gives a row of the same millisecond.  The other nodes of
	 * the node space may be another server's: ids made on them here could be
	 * the ones it makes.  Both are a node this call may not take, as with a
	 * node outside the space.
	 */
	if (nodes[node].node.id < 0 && snowflake_is_rekey_node(node))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("node %d is reserved for rekeys by flake.rekey_nodes", node),
				 errdetail("flake_migrate() gives existing rows ids made on the nodes \"%s\"; an id generated on one of them could equal the id a rekey gives a row.",
						   snowflake_rekey_nodes_string),
				 errhint("Pass a node of flake.nodes (\"%s\").", snowflake_nodes_string)));
	if (nodes[node].node.id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("node %d is not in flake.nodes", node),
				 errdetail("This server generates on nodes \"%s\" only; other servers may generate on the others.",
						   snowflake_nodes_string),
				 errhint("Pass a node of flake.nodes, or widen flake.nodes (restart) where no other server uses the node.")));
	if (*snowflake_nodes_string == '\0')
	{
		FlakeNodeSpace space;
		int			first;

		(void) snowflake_node_space(&space);
		snowflake_citus_share(&space);
		first = space.first->id;
		if (node < first || node >= first + space.count)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("node %d is not in this server's Citus node range", node),
					 errdetail("With flake.nodes empty, this server's Citus group generates on nodes %d to %d only; other groups generate on the others.",
							   first, first + space.count - 1),
					 errhint("Pass a node of that range, or give this server flake.nodes of its own (restart).")));
	}
	/* the node's last id may be older than the leased node's */
	if (!flake_horizon_holding[FLAKE_HORIZON_SNOWFLAKE])
		raise_to_clock(&nodes[node].node);
	flake_horizon_lower(FLAKE_HORIZON_SNOWFLAKE,
						(int64) (pg_atomic_read_u64(&nodes[node].node.last) >> snowflake_sequence_bits) +
						snowflake_epoch_unix_ms);
	PG_RETURN_INT64(snowflake_generate(node));
}

Datum
flake_node(PG_FUNCTION_ARGS)
{
	if (leased_node < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT32(leased_node);
}

static int64
checked_id(int64 id)
{
	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("value " INT64_FORMAT " is not a flake id", id),
				 errhint("flake ids are non-negative.")));
	return id;
}

static TimestampTz
id_timestamp(int64 id)
{
	TimestampTz result;

	if (!ms_to_timestamptz(id >> (snowflake_node_bits + snowflake_sequence_bits), &result))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp of flake id " INT64_FORMAT " is out of range", id),
				 errdetail("With flake.node_bits = %d and flake.sequence_bits = %d, its timestamp lies beyond PostgreSQL's timestamps.",
						   snowflake_node_bits, snowflake_sequence_bits)));
	return result;
}

/* The node of a non-negative id (also for flake_guard). */
int32
snowflake_node_of(int64 id)
{
	return (int32) ((id >> snowflake_sequence_bits) & ((INT64CONST(1) << snowflake_node_bits) - 1));
}

/*
 * An id that arrives from another server (receive.c): its millisecond, as
 * Unix ms.
 */
int64
snowflake_unix_ms_of(int64 id)
{
	return (id >> (snowflake_node_bits + snowflake_sequence_bits)) + snowflake_epoch_unix_ms;
}

/*
 * Raise the node of a non-negative id that arrived from another server to
 * the last sequence of its millisecond, so that this server's next id on
 * that node comes after every id the other server may have made on it in
 * that millisecond.  The caller has made the mark cover it.
 *
 * The id was read with the settings' layout, which is recorded first, as
 * before an id is issued: a server that received ids and never issued one
 * would otherwise take a later layout for a fresh server's, and issue them
 * again (make explore, seed 64948416).  Where the settings' layout is
 * refused, so is the id: the mark it would give means nothing.
 */
void
snowflake_raise_node(int64 id)
{
	int			seq_bits = snowflake_sequence_bits;
	uint64		ms = (uint64) id >> (snowflake_node_bits + seq_bits);

	if (unlikely(!layout_accepted))
		check_layout();
	flake_raise_last(&nodes[snowflake_node_of(id)].node.last,
					 (ms << seq_bits) | (((uint64) 1 << seq_bits) - 1));
}

static int32
id_sequence(int64 id)
{
	return (int32) (id & ((INT64CONST(1) << snowflake_sequence_bits) - 1));
}

Datum
flake_timestamp(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(id_timestamp(checked_id(PG_GETARG_INT64(0))));
}

Datum
flake_node_of(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(snowflake_node_of(checked_id(PG_GETARG_INT64(0))));
}

Datum
flake_sequence(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(id_sequence(checked_id(PG_GETARG_INT64(0))));
}

Datum
flake_decode(PG_FUNCTION_ARGS)
{
	int64		id = checked_id(PG_GETARG_INT64(0));
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = TimestampTzGetDatum(id_timestamp(id));
	values[1] = Int32GetDatum(snowflake_node_of(id));
	values[2] = Int32GetDatum(id_sequence(id));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}

/*
 * The timestamp's millisecond since flake.epoch, refused outside the
 * layout's range.
 */
static int64
timestamp_ms(TimestampTz ts)
{
	int64		max_ts = snowflake_max_timestamp();
	int64		ms = 0;

	if (!TIMESTAMP_NOT_FINITE(ts))
		ms = flake_timestamptz_to_unix_ms(ts) - snowflake_epoch_unix_ms;
	if (TIMESTAMP_NOT_FINITE(ts) || ms < 0 || ms > max_ts)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp \"%s\" is out of range for flake ids",
						pstrdup(timestamptz_to_str(ts))),
				 errhint("flake ids cover %s to %s.",
						 pstrdup(timestamptz_to_str(flake_unix_ms_to_timestamptz(snowflake_epoch_unix_ms))),
						 layout_end_text())));
	return ms;
}

/*
 * The smallest id of the timestamp's millisecond, so that
 * "id >= flake_from_timestamp(t)" selects ids issued at or after t.
 */
Datum
flake_from_timestamp(PG_FUNCTION_ARGS)
{
	/* checked against the layout's end: the shift cannot wrap */
	PG_RETURN_INT64(timestamp_ms(PG_GETARG_TIMESTAMPTZ(0)) <<
					(snowflake_node_bits + snowflake_sequence_bits));
}

/*
 * The largest id of the timestamp's millisecond, so that
 * "id <= flake_upper_bound(t)" selects ids issued at or before t.
 */
Datum
flake_upper_bound(PG_FUNCTION_ARGS)
{
	int			low_bits = snowflake_node_bits + snowflake_sequence_bits;

	PG_RETURN_INT64((timestamp_ms(PG_GETARG_TIMESTAMPTZ(0)) << low_bits) |
					((INT64CONST(1) << low_bits) - 1));
}

/*
 * The horizon: an id below which every flake_next() id that will ever
 * commit on this server is visible to a new snapshot already.  Every node
 * this server generates on is raised to the clock's millisecond first, so
 * that ids taken from now on lie above it; a transaction that took ids
 * before holds the horizon at or below them (horizon.c).
 */
Datum
flake_horizon(PG_FUNCTION_ARGS)
{
	int64		now;
	int64		held;
	int64		horizon;

	flake_horizon_refuse_in_recovery("flake_horizon()");
	now = clock_ms_since_epoch();
	if (now > 0)
	{
		uint64		floor = ((uint64) now << snowflake_sequence_bits) - 1;

		for (int i = 0; i < (1 << snowflake_node_bits); i++)
			if (nodes[i].node.id >= 0)
				flake_raise_last(&nodes[i].node.last, floor);
	}
	pg_memory_barrier();
	held = flake_horizon_held(FLAKE_HORIZON_SNOWFLAKE);
	horizon = Max(Min(now, held - snowflake_epoch_unix_ms), 0);
	if (horizon > snowflake_max_timestamp())
		PG_RETURN_INT64(PG_INT64_MAX);
	PG_RETURN_INT64(horizon << (snowflake_node_bits + snowflake_sequence_bits));
}
