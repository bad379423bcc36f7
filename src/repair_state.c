/*-------------------------------------------------------------------------
 *
 * repair_state.c
 *	  flake_repair_state(newest): new state files from an operator's
 *	  statement, where the damaged ones cannot be put back.
 *
 * A damaged flake.hwm or flake.rekeys refuses what it protects (state.c),
 * and the first repair is an intact copy put back.  Without one, nothing
 * on the server proves how far ids went: the clock may be behind ids
 * issued before, and WAL holds only the marks since the last checkpoint.
 * So the mark is the operator's: newest, a time no id of this server and
 * no row a rekey of this server gave an id is later than (from the newest
 * ids in the tables, or a time known to be past the server's last id).
 * The marks become newest (or what WAL replay brought, if higher), and
 * the claims every node of flake.rekey_nodes and every ulidflake band up
 * to newest, so that rekeys of later times go on.  An operator's wrong
 * newest can make ids repeat: that is the decision this function takes
 * from them, and docs/guarantees.md says so.
 *
 * A time no family's layout reaches would stop that family for good, and
 * one far ahead of the clock (a typo of a year) would stop the families
 * until the clock gets there: the first is refused, the second too unless
 * the operator confirms it (ahead_of_clock).  A repair made with a wrong
 * time is redone with again: the marks are raised to the new time, and
 * lowered only where past their layout's end or more than FAR_AHEAD_MS
 * ahead of the clock (state.c says why that alone is safe).
 *
 * Superusers only (checked here, besides EXECUTE revoked from PUBLIC).
 * Like nextval(), it is not undone by ROLLBACK.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/timestamp.h"

#include "claims.h"
#include "clock.h"
#include "settings.h"
#include "shmem.h"
#include "randflake.h"
#include "snowflake.h"
#include "snowflake_settings.h"
#include "state.h"
#include "ulidflake.h"

PG_FUNCTION_INFO_V1(flake_repair_state);

/*
 * How far ahead of the clock newest may be without ahead_of_clock: beyond
 * a clock's usual error, short of a typo in a date's day, month or year;
 * and beyond the most flake.max_borrow may be (an hour), so that no
 * family issues ids while its last one is that far ahead.
 */
#define FAR_AHEAD_MS	(INT64CONST(24) * 60 * 60 * 1000)

/* The rekey nodes' claims being made, and the last millisecond they cover. */
typedef struct CoverClaims
{
	FlakeRekeyClaim *claims;
	uint32		count;
	int64		last_ms;
} CoverClaims;

/* flake_nodes_foreach callback: claim each node of a range up to last_ms. */
static void
cover_nodes(int64 lo, int64 hi, void *arg)
{
	CoverClaims *cover = (CoverClaims *) arg;

	for (int64 n = lo; n <= hi; n++)
	{
		cover->claims = repalloc(cover->claims, sizeof(FlakeRekeyClaim) * (cover->count + 1));
		memset(&cover->claims[cover->count], 0, sizeof(FlakeRekeyClaim));
		cover->claims[cover->count].last_ms = cover->last_ms;
		cover->claims[cover->count++].node = (int32) n;
	}
}

/*
 * The last mark each family's layout can carry (FlakeMarks' units), so
 * that ids above it can still be made: the end of its timestamps.
 */
static void
layout_ends(FlakeMarks *ends)
{
	ends->mark[FLAKE_HWM_SNOWFLAKE] = snowflake_epoch_unix_ms + snowflake_max_timestamp();
	ends->mark[FLAKE_HWM_ULIDFLAKE] = ULIDFLAKE_EPOCH_UNIX_MS +
		((INT64CONST(1) << ULIDFLAKE_TIME_BITS) - 1);
	ends->mark[FLAKE_HWM_RANDFLAKE] = RANDFLAKE_EPOCH_UNIX +
		((INT64CONST(1) << RANDFLAKE_TIME_BITS) - 1);
}

/* Refuse marks past a layout's end, naming the family and the end. */
static void
refuse_past_end(TimestampTz newest, const FlakeMarks *accepted,
				const FlakeMarks *ends)
{
	static const char *const generators[FLAKE_HWM_FAMILIES] = {
		"flake_next()", "randflake_next()", "ulidflake_next()"
	};

	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
	{
		int64		end_ms = i == FLAKE_HWM_RANDFLAKE ?
		ends->mark[i] * 1000 : ends->mark[i];
		char	   *given;

		if (accepted->mark[i] <= ends->mark[i])
			continue;
		/* timestamptz_to_str returns a static buffer */
		given = pstrdup(timestamptz_to_str(newest));
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("the newest time of ids \"%s\" is past the end of %s's timestamps (%s)",
						given, generators[i],
						timestamptz_to_str(flake_unix_ms_to_timestamptz(end_ms))),
				 errdetail("No id of this server can carry it: with marks there, %s could never issue an id again. Nothing was changed.",
						   generators[i]),
				 errhint("Give the time of the newest id this server issued, such as the newest in the tables; check its year.")));
	}
}

/*
 * flake_repair_state(newest, ahead_of_clock, again): replace a flake.hwm or flake.rekeys that
 * cannot be used, taking newest as the time no id of this server, and no
 * row a rekey gave an id, is later than; with ahead_of_clock, newest may
 * be more than FAR_AHEAD_MS ahead of the clock; with again, the files
 * intact, the marks are corrected (flake_state_repair_again).
 */
Datum
flake_repair_state(PG_FUNCTION_ARGS)
{
	TimestampTz newest = PG_GETARG_TIMESTAMPTZ(0);
	bool		ahead_of_clock = PG_NARGS() > 1 && PG_GETARG_BOOL(1);
	bool		again = PG_NARGS() > 2 && PG_GETARG_BOOL(2);
	bool		layout_repaired;
	int64		newest_ms;
	FlakeMarks	accepted;
	FlakeMarks	ends;
	FlakeMarks	trusted;
	int64		now_ms = flake_clock_unix_ms();
	FlakeState	state;
	CoverClaims cover = {palloc(sizeof(FlakeRekeyClaim)), 0, 0};

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to repair flake's state files"),
				 errdetail("Only superusers may: the time given decides which ids may be issued again.")));
	flake_require_shared();
	PreventCommandIfReadOnly("flake_repair_state()");
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot repair flake's state files during recovery"),
				 errhint("Repair them once the server is promoted, or on the primary.")));
	if (TIMESTAMP_NOT_FINITE(newest) ||
		(newest_ms = flake_timestamptz_to_unix_ms(newest)) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("the newest time of ids must be a finite time after 1970-01-01, not \"%s\"",
						timestamptz_to_str(newest))));

	/* every id of the millisecond (and second) newest falls in is covered */
	accepted.mark[FLAKE_HWM_SNOWFLAKE] = newest_ms + 1;
	accepted.mark[FLAKE_HWM_ULIDFLAKE] = newest_ms + 1;
	accepted.mark[FLAKE_HWM_RANDFLAKE] = newest_ms / 1000 + 1;
	layout_ends(&ends);
	refuse_past_end(newest, &accepted, &ends);
	if (!ahead_of_clock && newest_ms > now_ms + FAR_AHEAD_MS)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("the newest time of ids \"%s\" is more than a day ahead of this server's clock",
						timestamptz_to_str(newest)),
				 errdetail("Ids are made at the clock's time: until the clock reaches it, the generators would refuse. Nothing was changed."),
				 errhint("Check the time given. If ids of this server were issued at that time (its clock was ahead then), run SELECT flake_repair_state('%s', ahead_of_clock => true).",
						 timestamptz_to_str(newest))));
	cover.last_ms = newest_ms + 1 - snowflake_epoch_unix_ms;
	if (cover.last_ms >= 0 && *snowflake_rekey_nodes_string != '\0')
		flake_nodes_foreach(snowflake_rekey_nodes_string, snowflake_node_bits,
							cover_nodes, &cover);
	cover.last_ms = newest_ms + 1 - ULIDFLAKE_EPOCH_UNIX_MS;
	if (cover.last_ms >= 0)
		cover_nodes(-FLAKE_REKEY_BANDS, -1, &cover);

	/* again: marks past these were written by a repair, not by ids */
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		trusted.mark[i] = Min(ends.mark[i], i == FLAKE_HWM_RANDFLAKE ?
							  (now_ms + FAR_AHEAD_MS) / 1000 : now_ms + FAR_AHEAD_MS);

	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	layout_repaired = snowflake_repair_layout();
	if (!again ||
		!flake_state_repair_again(&flake_shared->state, &flake_shared->marks.value,
								  &accepted, &trusted))
		flake_state_repair(&flake_shared->state, &flake_shared->marks.value,
						   &accepted, cover.claims, cover.count, layout_repaired);
	flake_shmem_raise();
	state = flake_shared->state;
	LWLockRelease(flake_shared->lock);
	ereport(LOG,
			(errmsg("flake_repair_state() took %s as the newest time of the ids issued and rekeyed",
					timestamptz_to_str(newest))));

	/* a waiting import that cannot be used still refuses: say so */
	flake_state_warn(&state);
	PG_RETURN_VOID();
}
