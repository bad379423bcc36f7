/*-------------------------------------------------------------------------
 *
 * wal.c
 *	  flake's WAL resource manager: replaying the high-water marks.
 *
 * Each time a family's mark moves a chunk ahead, highwater.c logs all three
 * marks in a record of this resource manager.  Replay raises the marks, in
 * flake.hwm and in shared memory, wherever WAL is replayed: on a standby,
 * in crash recovery, and when a base backup is restored with its WAL.  So
 * a promoted standby or a restored server starts above every id issued
 * before the last record it replayed.
 *
 * Replaying these records needs flake in shared_preload_libraries; see the
 * README for what happens without it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"

#include "highwater.h"
#include "shmem.h"
#include "wal.h"

static void
flake_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	FlakeMarks	logged;

	if (info != XLOG_FLAKE_MARKS || XLogRecGetDataLen(record) != sizeof(logged))
		elog(PANIC, "flake_redo: unknown record: info %u, length %u",
			 info, XLogRecGetDataLen(record));
	memcpy(&logged, XLogRecGetData(record), sizeof(logged));

	flake_hwm_raise(&flake_shared->marks.value, flake_shared->lock, &logged);
}

static void
flake_desc(StringInfo buf, XLogReaderState *record)
{
	FlakeMarks	marks;

	if (XLogRecGetDataLen(record) != sizeof(marks))
		return;
	memcpy(&marks, XLogRecGetData(record), sizeof(marks));
	appendStringInfo(buf, "snowflake " INT64_FORMAT " ms, randflake " INT64_FORMAT " s, ulidflake " INT64_FORMAT " ms (Unix time)",
					 marks.mark[FLAKE_HWM_SNOWFLAKE],
					 marks.mark[FLAKE_HWM_RANDFLAKE],
					 marks.mark[FLAKE_HWM_ULIDFLAKE]);
}

static const char *
flake_identify(uint8 info)
{
	if ((info & ~XLR_INFO_MASK) == XLOG_FLAKE_MARKS)
		return "MARKS";
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
