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
#include "snowflake_settings.h"
#include "state.h"
#include "ulidflake.h"

PG_FUNCTION_INFO_V1(flake_repair_state);

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
 * flake_repair_state(newest): replace a flake.hwm or flake.rekeys that
 * cannot be used, taking newest as the time no id of this server, and no
 * row a rekey gave an id, is later than.
 */
Datum
flake_repair_state(PG_FUNCTION_ARGS)
{
	TimestampTz newest = PG_GETARG_TIMESTAMPTZ(0);
	int64		newest_ms;
	FlakeMarks	accepted;
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
	cover.last_ms = newest_ms + 1 - snowflake_epoch_unix_ms;
	if (cover.last_ms >= 0 && *snowflake_rekey_nodes_string != '\0')
		flake_nodes_foreach(snowflake_rekey_nodes_string, snowflake_node_bits,
							cover_nodes, &cover);
	cover.last_ms = newest_ms + 1 - ULIDFLAKE_EPOCH_UNIX_MS;
	if (cover.last_ms >= 0)
		cover_nodes(-FLAKE_REKEY_BANDS, -1, &cover);

	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	flake_state_repair(&flake_shared->state, &flake_shared->marks.value,
					   &accepted, cover.claims, cover.count);
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
