/*-------------------------------------------------------------------------
 *
 * snowflake_settings.c
 *	  The settings of flake_next(): its layout and the nodes it may use.
 *
 * The layout (epoch, node, sequence and id bits) and the nodes this server may
 * lease are fixed at server start: changing them under running generators
 * could reissue ids.  flake.max_borrow only bounds how far ids run ahead of
 * the clock (ulidflake_next()'s too), so it can change on reload.  Invalid values stop the server
 * (see settings.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "clock.h"
#include "settings.h"
#include "snowflake_settings.h"

char	   *snowflake_epoch_string = NULL;
int64		snowflake_epoch_unix_ms = INT64CONST(1420070400000);	/* 2015-01-01 */
int			snowflake_node_bits = 10;
int			snowflake_sequence_bits = 12;
int			snowflake_id_bits = 63;
char	   *snowflake_nodes_string = NULL;
char	   *snowflake_rekey_nodes_string = NULL;
int			snowflake_max_borrow_ms = 1000;

/* Fewer timestamp bits than this would wrap within a few weeks. */
#define MIN_TIMESTAMP_BITS	31

#define MIN_SEQUENCE_BITS	1
#define MAX_SEQUENCE_BITS	(63 - MIN_TIMESTAMP_BITS)
#define MIN_ID_BITS			(MIN_TIMESTAMP_BITS + MIN_SEQUENCE_BITS)
#define MAX_BORROW_MS		(3600 * 1000)

/* A layout whose time ends sooner than this is worth a warning at start. */
#define LAYOUT_WARN_MS		(INT64CONST(366) * SECS_PER_DAY * 1000)

static bool
check_epoch(char **newval, void **extra, GucSource source)
{
	int64		unix_ms;

	if (!flake_parse_epoch(*newval, &unix_ms))
	{
		GUC_check_errdetail("flake.epoch must be a UTC timestamp such as \"2015-01-01 00:00:00+00\".");
		return flake_reject_setting("flake.epoch", *newval);
	}
	if (unix_ms < 0)
	{
		GUC_check_errdetail("flake.epoch must not be before 1970-01-01.");
		return flake_reject_setting("flake.epoch", *newval);
	}
	/* ids before the epoch cannot be made: a future epoch is a mistake */
	if (unix_ms > flake_clock_unix_ms())
	{
		GUC_check_errdetail("flake.epoch must not be later than the system clock.");
		return flake_reject_setting("flake.epoch", *newval);
	}
	return true;
}

static void
assign_epoch(const char *newval, void *extra)
{
	(void) flake_parse_epoch(newval, &snowflake_epoch_unix_ms);
}


/* Check a list of nodes of flake_next()'s node space. */
static bool
check_snowflake_nodes(const char *name, const char *value)
{
	char		space[32];

	snprintf(space, sizeof(space), "flake.node_bits = %d", snowflake_node_bits);
	return flake_check_node_list(name, value, snowflake_node_bits, space);
}

static bool
check_nodes(char **newval, void **extra, GucSource source)
{
	return check_snowflake_nodes("flake.nodes", *newval);
}

static bool
check_rekey_nodes(char **newval, void **extra, GucSource source)
{
	return check_snowflake_nodes("flake.rekey_nodes", *newval);
}

static void
mark_nodes(int64 lo, int64 hi, void *arg)
{
	for (int64 n = lo; n <= hi; n++)
		((bool *) arg)[n] = true;
}

/* The first node of flake.rekey_nodes that flake.nodes also lists. */
typedef struct NodeOverlap
{
	bool	   *leasable;		/* by node: in flake.nodes */
	int64		first;			/* -1 while none is found */
} NodeOverlap;

static void
find_overlap(int64 lo, int64 hi, void *arg)
{
	NodeOverlap *overlap = (NodeOverlap *) arg;

	for (int64 n = lo; n <= hi && overlap->first < 0; n++)
		if (overlap->leasable[n])
			overlap->first = n;
}

/* Whether a node of the node space is one of flake.rekey_nodes. */
bool
snowflake_is_rekey_node(int node)
{
	if (snowflake_rekey_nodes_string == NULL || *snowflake_rekey_nodes_string == '\0')
		return false;
	return flake_nodes_contain(snowflake_rekey_nodes_string, snowflake_node_bits, node);
}

/*
 * Rekeyed ids lie in the past, where live ids may exist on any node live
 * generation could lease: the nodes reserved for rekeys must be nodes it
 * never leases.
 */
static void
check_rekey_nodes_apart(void)
{
	NodeOverlap overlap;

	if (snowflake_rekey_nodes_string == NULL || *snowflake_rekey_nodes_string == '\0')
		return;
	overlap.leasable = palloc0(sizeof(bool) << snowflake_node_bits);
	overlap.first = -1;
	flake_nodes_foreach(snowflake_nodes_string, snowflake_node_bits, mark_nodes, overlap.leasable);
	flake_nodes_foreach(snowflake_rekey_nodes_string, snowflake_node_bits, find_overlap, &overlap);
	pfree(overlap.leasable);
	if (overlap.first >= 0)
		ereport(flake_settings_elevel(),
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("node " INT64_FORMAT " is in both flake.nodes and flake.rekey_nodes",
						overlap.first),
				 errdetail("flake_next() leases the nodes of flake.nodes (every node when it is empty); the ids of rekeys need nodes it never uses."),
				 errhint("Leave the nodes of flake.rekey_nodes out of flake.nodes, for example flake.nodes = '0-1015' and flake.rekey_nodes = '1016-1023'.")));
}


/*
 * Without preloading, the server-start settings cannot be defined (a backend
 * may not create PGC_POSTMASTER settings), but decoding still needs the
 * layout: take the values from postgresql.conf, checked the same way.
 */
static void
read_postmaster_settings(void)
{
	const char *value;
	char	   *copy;
	int			bits;

	if ((value = GetConfigOption("flake.epoch", true, false)) != NULL)
	{
		copy = pstrdup(value);
		if (check_epoch(&copy, NULL, PGC_S_FILE))
			assign_epoch(copy, NULL);
		snowflake_epoch_string = copy;
	}
	else
		snowflake_epoch_string = "2015-01-01 00:00:00+00";
	if (flake_strict_int("flake.node_bits", 0, SNOWFLAKE_MAX_NODE_BITS, 0, &bits))
		snowflake_node_bits = bits;
	if (flake_strict_int("flake.sequence_bits", MIN_SEQUENCE_BITS, MAX_SEQUENCE_BITS, 0, &bits))
		snowflake_sequence_bits = bits;
	if (flake_strict_int("flake.id_bits", MIN_ID_BITS, 63, 0, &bits))
		snowflake_id_bits = bits;
	copy = pstrdup((value = GetConfigOption("flake.nodes", true, false)) ? value : "");
	if (check_nodes(&copy, NULL, PGC_S_FILE))
		snowflake_nodes_string = copy;
}


/*
 * Define the settings, from _PG_init, between flake_settings_begin() and
 * flake_settings_end().  The layout settings come before flake.nodes, whose
 * check needs the node space.
 */
void
snowflake_define_settings(void)
{
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomStringVariable("flake.epoch",
								   "Start of flake_next() timestamps.",
								   "A UTC timestamp; ids count milliseconds from it.",
								   &snowflake_epoch_string,
								   "2015-01-01 00:00:00+00",
								   PGC_POSTMASTER, 0,
								   check_epoch, assign_epoch, NULL);
		flake_define_int("flake.node_bits",
						 "Bits of a flake_next() id that hold the node.",
						 NULL,
						 &snowflake_node_bits,
						 10, 0, SNOWFLAKE_MAX_NODE_BITS,
						 PGC_POSTMASTER, 0);
		flake_define_int("flake.sequence_bits",
						 "Bits of a flake_next() id that hold the sequence within a millisecond.",
						 NULL,
						 &snowflake_sequence_bits,
						 12, MIN_SEQUENCE_BITS, MAX_SEQUENCE_BITS,
						 PGC_POSTMASTER, 0);
		flake_define_int("flake.id_bits",
						 "Bits of a flake_next() id: every id is below 2^flake.id_bits.",
						 "63 takes the whole non-negative bigint; 53 keeps ids exact as JavaScript numbers.",
						 &snowflake_id_bits,
						 63, MIN_ID_BITS, 63,
						 PGC_POSTMASTER, 0);
		DefineCustomStringVariable("flake.nodes",
								   "Nodes this server may lease to flake_next(), such as 0-511 or 3,8-15.",
								   "Empty means the whole node space. Servers that share keys need disjoint sets.",
								   &snowflake_nodes_string,
								   "",
								   PGC_POSTMASTER, 0,
								   check_nodes, NULL, NULL);
		DefineCustomStringVariable("flake.rekey_nodes",
								   "Nodes reserved for the ids flake_migrate() gives existing rows, such as 1016-1023.",
								   "flake.nodes must leave them out, here and on every server that shares keys. Empty: no rekeys with flake_next.",
								   &snowflake_rekey_nodes_string,
								   "",
								   PGC_POSTMASTER, 0,
								   check_rekey_nodes, NULL, NULL);
	}
	else
		read_postmaster_settings();
	flake_define_int("flake.max_borrow",
					 "How far flake_next() and ulidflake_next() ids may run ahead of the clock.",
					 "When a millisecond's ids are used up, ids borrow later milliseconds up to this far ahead; beyond it, generation waits for the clock.",
					 &snowflake_max_borrow_ms,
					 1000, 0, MAX_BORROW_MS,
					 PGC_SIGHUP, GUC_UNIT_MS);
}

/*
 * A valid layout may still have run out, or soon will: flake.id_bits = 53
 * with the default node and sequence bits ended 24 days after the default
 * epoch.  Say so once, at server start, rather than only at the first id
 * refused.
 */
static void
warn_layout_end(void)
{
	int64		end_ms = snowflake_epoch_unix_ms + snowflake_max_timestamp();
	int64		now_ms = flake_timestamptz_to_unix_ms(GetCurrentTimestamp());
	const char *end_text;

	if (end_ms - now_ms >= LAYOUT_WARN_MS)
		return;
	end_text = timestamptz_to_str(flake_unix_ms_to_timestamptz(end_ms));
	ereport(WARNING,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 end_ms < now_ms ?
			 errmsg("flake_next() ids ran out at %s", end_text) :
			 errmsg("flake_next() ids run out at %s", end_text),
			 errdetail("flake.id_bits (%d) less flake.node_bits (%d) and flake.sequence_bits (%d) leaves %d bits of milliseconds since flake.epoch; past their end flake_next() refuses with 22003.",
					   snowflake_id_bits, snowflake_node_bits, snowflake_sequence_bits,
					   snowflake_timestamp_bits()),
			 errhint("Give the time more bits (fewer node or sequence bits), or a later flake.epoch for a new server.")));
}

/*
 * Check what no single setting's hook can, once every value is valid
 * (after flake_settings_end()).
 */
void
snowflake_check_settings(void)
{
	check_rekey_nodes_apart();
	if (snowflake_timestamp_bits() < MIN_TIMESTAMP_BITS)
		ereport(flake_settings_elevel(),
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flake.node_bits (%d) and flake.sequence_bits (%d) leave %d timestamp bits of flake.id_bits (%d)",
						snowflake_node_bits, snowflake_sequence_bits,
						snowflake_timestamp_bits(), snowflake_id_bits),
				 errdetail("A flake_next() id needs at least %d bits of timestamp (about 24 days of milliseconds); node and sequence bits may add up to at most %d.",
						   MIN_TIMESTAMP_BITS, snowflake_id_bits - MIN_TIMESTAMP_BITS)));
	if (process_shared_preload_libraries_in_progress)
		warn_layout_end();
}
