/*-------------------------------------------------------------------------
 *
 * highwater.c
 *	  The persisted high-water marks of issued timestamps.
 *
 * Before an id with a timestamp beyond its family's high-water mark is
 * returned, the mark is moved a chunk further ahead, written to a small file
 * in the data directory and logged in WAL, as sequences log ahead of
 * the values they hand out.  After a restart or crash, generation
 * resumes above the marks, so no id is reissued even when the clock has
 * been set back meanwhile.  One write per chunk keeps fsyncs off the hot
 * path.
 *
 * Each time a family's mark moves, flake.hwm is replaced and all three marks
 * are logged in a WAL record of flake's own resource manager; the record is
 * flushed before the generators see the new mark and hand out ids under it.
 * (The file comes first, so that a full data directory fails the move
 * before anything is logged.)  Replay (wal.c) raises the marks, in flake.hwm
 * and in shared memory, wherever WAL is replayed: on a standby, in crash
 * recovery, and when a base backup is restored with its WAL.
 *
 * The file is replaced, never written in place (datafile.c), so a full
 * disk or a crash at any point leaves the old marks or the new ones.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "access/xlog.h"
#include "access/xloginsert.h"
#include "storage/fd.h"

#include "datafile.h"
#include "highwater.h"

#define FLAKE_HWM_FILE		"flake.hwm"
#define FLAKE_HWM_TEMP_FILE	"flake.hwm.tmp"
#define FLAKE_HWM_MAGIC		0x464C4B33	/* "FLK3" */
#define FLAKE_HWM_MAGIC_V2	0x464C4B32	/* "FLK2": no ulidflake mark */

typedef struct FlakeHwmFile
{
	uint32		magic;
	uint32		reserved;
	FlakeMarks	marks;
	pg_crc32c	crc;			/* of the fields above */
} FlakeHwmFile;

/* The file as releases before the ulidflake mark wrote it. */
typedef struct FlakeHwmFileV2
{
	uint32		magic;
	uint32		reserved;
	int64		snowflake_unix_ms;
	int64		randflake_unix_s;
	pg_crc32c	crc;
} FlakeHwmFileV2;

/*
 * Read the high-water marks (0 when no file exists yet).  Called in the
 * postmaster while it creates shared memory.  A damaged file stops the
 * server: without it, ids issued before could be issued again.  A file in
 * the format before the ulidflake mark is read with that mark at 0 (those
 * releases kept no ulidflake mark); the next write is in the new format.
 */
void
flake_hwm_read(FlakeMarks *marks)
{
	union
	{
		FlakeHwmFile v3;
		FlakeHwmFileV2 v2;
		char		bytes[sizeof(FlakeHwmFile) + 1];
	}			data;
	int			fd;
	int			nread;

	memset(marks, 0, sizeof(*marks));

	/* a replacement that a crash or a full disk left unfinished */
	if (unlink(FLAKE_HWM_TEMP_FILE) != 0 && errno != ENOENT)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", FLAKE_HWM_TEMP_FILE)));

	fd = OpenTransientFile(FLAKE_HWM_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return;
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", FLAKE_HWM_FILE)));
	}
	memset(&data, 0, sizeof(data));
	nread = read(fd, &data, sizeof(data));
	CloseTransientFile(fd);

	if (nread == sizeof(FlakeHwmFile) && data.v3.magic == FLAKE_HWM_MAGIC &&
		EQ_CRC32C(data.v3.crc, flake_datafile_crc(&data.v3, offsetof(FlakeHwmFile, crc))))
		*marks = data.v3.marks;
	else if (nread == sizeof(FlakeHwmFileV2) && data.v2.magic == FLAKE_HWM_MAGIC_V2 &&
			 EQ_CRC32C(data.v2.crc, flake_datafile_crc(&data.v2, offsetof(FlakeHwmFileV2, crc))))
	{
		marks->mark[FLAKE_HWM_SNOWFLAKE] = data.v2.snowflake_unix_ms;
		marks->mark[FLAKE_HWM_RANDFLAKE] = data.v2.randflake_unix_s;
	}
	else
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("flake high-water mark file \"%s\" is damaged", FLAKE_HWM_FILE),
				 errdetail("It records the newest timestamp flake may have issued; without it, ids could repeat."),
				 errhint("If the system clock is known to be past every issued id, remove the file and start the server again.")));
}

/*
 * Replace the file with the marks (see datafile.c).  A temporary file left
 * behind by a crash is removed at the next start.  The caller holds the
 * marks' lock exclusively.
 */
static void
hwm_write(const FlakeMarks *marks)
{
	FlakeHwmFile data;

	memset(&data, 0, sizeof(data));
	data.magic = FLAKE_HWM_MAGIC;
	data.marks = *marks;
	data.crc = flake_datafile_crc(&data, offsetof(FlakeHwmFile, crc));
	flake_datafile_replace(FLAKE_HWM_FILE, FLAKE_HWM_TEMP_FILE,
						   &data, sizeof(data));
}

/* Set up the shared state from the marks read at start. */
void
flake_hwm_init(FlakeMarkState *state, const FlakeMarks *marks)
{
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		pg_atomic_init_u64(&state->mark[i], (uint64) marks->mark[i]);
}

/* The marks as shared memory has them. */
void
flake_hwm_current(FlakeMarkState *state, FlakeMarks *marks)
{
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		marks->mark[i] = (int64) pg_atomic_read_u64(&state->mark[i]);
}

/*
 * Give the marks to the generators, once they are persisted.  The caller
 * holds the marks' lock exclusively.
 */
static void
hwm_publish(FlakeMarkState *state, const FlakeMarks *marks)
{
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		pg_atomic_write_u64(&state->mark[i], (uint64) marks->mark[i]);
}

/*
 * Make sure the persisted mark of a family covers value (its timestamp unit)
 * before an id with that timestamp is returned: move it a chunk beyond
 * value in the file and in WAL, then give it to the generators.
 */
void
flake_hwm_extend(FlakeMarkState *state, LWLock *lock, FlakeHwm which,
				 int64 value)
{
	/* how far ahead of value a move takes the mark, by FlakeHwm */
	static const int64 chunk[FLAKE_HWM_FAMILIES] = {
		FLAKE_HWM_CHUNK_MS, FLAKE_HWM_CHUNK_S, FLAKE_HWM_CHUNK_MS
	};
	FlakeMarks	marks;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	flake_hwm_current(state, &marks);
	/* another backend may have moved it while we waited */
	if (marks.mark[which] < value)
	{
		XLogRecPtr	lsn;

		marks.mark[which] = value + chunk[which];
		hwm_write(&marks);
		XLogBeginInsert();
		XLogRegisterData((char *) &marks, sizeof(marks));
		lsn = XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_MARKS);
		XLogFlush(lsn);
		hwm_publish(state, &marks);
	}
	LWLockRelease(lock);
}

/*
 * Raise the marks to those of a replayed WAL record, in the file and in
 * shared memory.  Marks never go down: a record replayed again changes
 * nothing.
 */
void
flake_hwm_raise(FlakeMarkState *state, LWLock *lock, const FlakeMarks *logged)
{
	FlakeMarks	current;
	FlakeMarks	next;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	flake_hwm_current(state, &current);
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		next.mark[i] = Max(current.mark[i], logged->mark[i]);
	if (memcmp(&next, &current, sizeof(next)) != 0)
	{
		hwm_write(&next);
		hwm_publish(state, &next);
	}
	LWLockRelease(lock);
}
