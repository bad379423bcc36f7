/*-------------------------------------------------------------------------
 *
 * wal.c
 *	  Moving the high-water marks ahead, and carrying them in WAL.
 *
 * Each time a family's mark moves a chunk ahead, flake.hwm is replaced and
 * all three marks are logged in a WAL record of flake's own resource
 * manager; the record is flushed before the generators see the new mark
 * and hand out ids under it.  (The file comes first, so that a full data
 * directory fails the move before anything is logged.)  Replay raises the
 * marks, in flake.hwm and in shared memory, wherever WAL is replayed: on a
 * standby, in crash recovery, and when a base backup is restored with its
 * WAL.  So a promoted standby or a restored server starts above every id
 * issued before the last record it replayed.
 *
 * Replaying these records needs flake in shared_preload_libraries; see the
 * README for what happens without it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "storage/lwlock.h"

#include "flake.h"

/*
 * flake's resource manager id, from the range for extensions (128-255).
 * It must be entered on the PostgreSQL wiki page CustomWALResourceManagers
 * before a release, so that no other extension takes it.
 */
#define FLAKE_RMGR_ID		211
#define FLAKE_RMGR_NAME		"flake"

/* The only record: the three marks (FlakeMarks) after a move. */
#define XLOG_FLAKE_MARKS	0x00

static void
flake_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	FlakeMarks	logged;
	FlakeMarks	current;
	FlakeMarks	next;

	if (info != XLOG_FLAKE_MARKS || XLogRecGetDataLen(record) != sizeof(logged))
		elog(PANIC, "flake_redo: unknown record: info %u, length %u",
			 info, XLogRecGetDataLen(record));
	memcpy(&logged, XLogRecGetData(record), sizeof(logged));

	/* marks never go down: a record replayed again changes nothing */
	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	flake_hwm_current(&current);
	next.snowflake_unix_ms = Max(current.snowflake_unix_ms, logged.snowflake_unix_ms);
	next.randflake_unix_s = Max(current.randflake_unix_s, logged.randflake_unix_s);
	next.ulidflake_unix_ms = Max(current.ulidflake_unix_ms, logged.ulidflake_unix_ms);
	if (memcmp(&next, &current, sizeof(next)) != 0)
	{
		flake_hwm_write(&next);
		flake_hwm_publish(&next);
	}
	LWLockRelease(flake_shared->lock);
}

static void
flake_desc(StringInfo buf, XLogReaderState *record)
{
	FlakeMarks	marks;

	if (XLogRecGetDataLen(record) != sizeof(marks))
		return;
	memcpy(&marks, XLogRecGetData(record), sizeof(marks));
	appendStringInfo(buf, "snowflake " INT64_FORMAT " ms, randflake " INT64_FORMAT " s, ulidflake " INT64_FORMAT " ms (Unix time)",
					 marks.snowflake_unix_ms, marks.randflake_unix_s,
					 marks.ulidflake_unix_ms);
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

/*
 * Make sure the persisted mark of a family covers value (its timestamp unit)
 * before an id with that timestamp is returned: move it a chunk beyond
 * value in the file and in WAL, then give it to the generators.
 */
void
flake_hwm_extend(FlakeHwm which, int64 value)
{
	FlakeMarks	marks;
	int64	   *mark;
	int64		chunk;

	switch (which)
	{
		case FLAKE_HWM_SNOWFLAKE:
			mark = &marks.snowflake_unix_ms;
			chunk = FLAKE_HWM_CHUNK_MS;
			break;
		case FLAKE_HWM_RANDFLAKE:
			mark = &marks.randflake_unix_s;
			chunk = FLAKE_HWM_CHUNK_S;
			break;
		case FLAKE_HWM_ULIDFLAKE:
		default:
			mark = &marks.ulidflake_unix_ms;
			chunk = FLAKE_HWM_CHUNK_MS;
			break;
	}

	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	flake_hwm_current(&marks);
	/* another backend may have moved it while we waited */
	if (*mark < value)
	{
		XLogRecPtr	lsn;

		*mark = value + chunk;
		flake_hwm_write(&marks);
		XLogBeginInsert();
		XLogRegisterData((char *) &marks, sizeof(marks));
		lsn = XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_MARKS);
		XLogFlush(lsn);
		flake_hwm_publish(&marks);
	}
	LWLockRelease(flake_shared->lock);
}
