/*-------------------------------------------------------------------------
 *
 * wal.c
 *	  flake's WAL resource manager: replaying the marks and rekey claims.
 *
 * Each time a family's mark moves a chunk ahead, hwm.c logs all three
 * marks in a record of this resource manager; each rekey claim is logged
 * in one too (claims.c), and another server's state taken over in one
 * (state.c), and a repair redone in one (state.c).  Replay raises the marks, in flake.hwm and in shared memory,
 * names the servers taken over, and adds the claims to flake.rekeys
 * (state.c: while a file cannot be used, in shared memory only), wherever WAL is
 * replayed: on a standby, in crash recovery, and when a base backup is
 * restored with its WAL.  So a promoted standby or a restored server
 * starts above every id issued, and claims no node claimed, before the
 * last record it replayed.
 *
 * Replaying these records needs flake in shared_preload_libraries; see the
 * docs/guarantees.md for what happens without it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"

#include "claims.h"
#include "hwm.h"
#include "layout.h"
#include "shmem.h"
#include "state.h"
#include "wal.h"

/* Whether a record is one flake writes: its type, and a length to match. */
static bool
record_is_valid(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	uint32		len = XLogRecGetDataLen(record);

	if (info == XLOG_FLAKE_MARKS || info == XLOG_FLAKE_MARKS_SET)
		return len == sizeof(FlakeMarks);
	if (info == XLOG_FLAKE_TAKE_OVER)
		return len > sizeof(FlakeMarks) &&
			(len - sizeof(FlakeMarks)) % sizeof(uint64) == 0;
	if (info == XLOG_FLAKE_REKEY_CLAIMS)
		return len > 0 && len % sizeof(FlakeRekeyClaim) == 0;
	if (info == XLOG_FLAKE_LAYOUT)
		return len == sizeof(FlakeLayout);
	return false;
}

/*
 * A layout recorded on the primary: recorded here too, so that after a
 * promotion flake_next() compares its settings with it.
 */
static void
redo_layout(const FlakeLayout *logged)
{
	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	flake_layout_write(logged);
	flake_shared->layout = *logged;
	flake_shared->layout_read = true;
	flake_shared->layout_problem.status = FLAKE_FILE_OK;
	flake_shared->layout_status = FLAKE_LAYOUT_UNCHECKED;
	LWLockRelease(flake_shared->lock);
}

static void
flake_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (!record_is_valid(record))
		elog(PANIC, "flake_redo: unknown record: info %u, length %u",
			 info, XLogRecGetDataLen(record));

	/* the record's data need not be aligned for int64: copied */
	if (info == XLOG_FLAKE_MARKS || info == XLOG_FLAKE_TAKE_OVER)
	{
		FlakeMarks	logged;
		uint32		count = (XLogRecGetDataLen(record) - sizeof(logged)) / sizeof(uint64);
		uint64	   *servers = palloc(sizeof(uint64) * Max(count, 1));

		memcpy(&logged, XLogRecGetData(record), sizeof(logged));
		memcpy(servers, XLogRecGetData(record) + sizeof(logged), sizeof(uint64) * count);
		flake_state_redo_marks(&flake_shared->state, &flake_shared->marks.value,
							   flake_shared->lock, &logged, servers, count);
		pfree(servers);
	}
	else if (info == XLOG_FLAKE_MARKS_SET)
	{
		FlakeMarks	logged;

		memcpy(&logged, XLogRecGetData(record), sizeof(logged));
		flake_state_redo_set(&flake_shared->state, &flake_shared->marks.value,
							 flake_shared->lock, &logged);
	}
	else if (info == XLOG_FLAKE_LAYOUT)
	{
		FlakeLayout logged;

		memcpy(&logged, XLogRecGetData(record), sizeof(logged));
		redo_layout(&logged);
	}
	else
	{
		uint32		n = XLogRecGetDataLen(record) / sizeof(FlakeRekeyClaim);
		FlakeRekeyClaim *claims = palloc(XLogRecGetDataLen(record));

		memcpy(claims, XLogRecGetData(record), XLogRecGetDataLen(record));
		flake_state_redo_claims(&flake_shared->state, flake_shared->lock, claims, n);
		pfree(claims);
	}
}

static void
flake_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (!record_is_valid(record))
		return;
	if (info == XLOG_FLAKE_MARKS || info == XLOG_FLAKE_TAKE_OVER ||
		info == XLOG_FLAKE_MARKS_SET)
	{
		FlakeMarks	marks;

		memcpy(&marks, XLogRecGetData(record), sizeof(marks));
		appendStringInfo(buf, "snowflake " INT64_FORMAT " ms, randflake " INT64_FORMAT " s, ulidflake " INT64_FORMAT " ms (Unix time)",
						 marks.mark[FLAKE_HWM_SNOWFLAKE],
						 marks.mark[FLAKE_HWM_RANDFLAKE],
						 marks.mark[FLAKE_HWM_ULIDFLAKE]);
		for (uint32 i = 0; i < (XLogRecGetDataLen(record) - sizeof(marks)) / sizeof(uint64); i++)
		{
			uint64		server;

			memcpy(&server, XLogRecGetData(record) + sizeof(marks) + i * sizeof(server), sizeof(server));
			appendStringInfo(buf, "%s" UINT64_FORMAT, i == 0 ? "; taken over from servers " : ", ", server);
		}
	}
	else if (info == XLOG_FLAKE_LAYOUT)
	{
		FlakeLayout layout;

		memcpy(&layout, XLogRecGetData(record), sizeof(layout));
		appendStringInfo(buf, "epoch " INT64_FORMAT " ms (Unix time), %d id bits, %d node bits, %d sequence bits",
						 layout.epoch_unix_ms, layout.id_bits, layout.node_bits,
						 layout.sequence_bits);
	}
	else
	{
		for (uint32 i = 0; i < XLogRecGetDataLen(record) / sizeof(FlakeRekeyClaim); i++)
		{
			FlakeRekeyClaim claim;

			memcpy(&claim, XLogRecGetData(record) + i * sizeof(claim), sizeof(claim));
			appendStringInfo(buf, "%s%s %d ms " INT64_FORMAT " to " INT64_FORMAT,
							 i > 0 ? "; " : "", claim.node < 0 ? "band" : "node",
							 claim.node < 0 ? -1 - claim.node : claim.node,
							 claim.first_ms, claim.last_ms);
		}
	}
}

static const char *
flake_identify(uint8 info)
{
	if ((info & ~XLR_INFO_MASK) == XLOG_FLAKE_MARKS)
		return "MARKS";
	if ((info & ~XLR_INFO_MASK) == XLOG_FLAKE_REKEY_CLAIMS)
		return "REKEY_CLAIMS";
	if ((info & ~XLR_INFO_MASK) == XLOG_FLAKE_TAKE_OVER)
		return "TAKE_OVER";
	if ((info & ~XLR_INFO_MASK) == XLOG_FLAKE_MARKS_SET)
		return "MARKS_SET";
	if ((info & ~XLR_INFO_MASK) == XLOG_FLAKE_LAYOUT)
		return "LAYOUT";
	return NULL;
}

static RmgrData flake_rmgr = {
	.rm_name = FLAKE_RMGR_NAME,
	.rm_redo = flake_redo,
	.rm_desc = flake_desc,
	.rm_identify = flake_identify,
};

/* From _PG_init, while shared_preload_libraries are loaded. */
void
flake_wal_register(void)
{
	RegisterCustomRmgr(FLAKE_RMGR_ID, &flake_rmgr);
}
