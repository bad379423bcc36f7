/*-------------------------------------------------------------------------
 *
 * highwater.c
 *	  The persisted high-water mark of issued timestamps.
 *
 * Before an id with a timestamp beyond the high-water mark is returned, the
 * mark is moved FLAKE_HWM_CHUNK_MS further ahead and written to a small file
 * in the data directory (as sequences log ahead of the values they hand
 * out).  After a restart or crash, generation resumes above the mark, so
 * no id is reissued even when the clock has been set back meanwhile.  One
 * write per chunk keeps fsyncs off the hot path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/lwlock.h"

#include "flake.h"

#define FLAKE_HWM_FILE		"flake.hwm"
#define FLAKE_HWM_MAGIC		0x464C4B31	/* "FLK1" */

typedef struct FlakeHwmFile
{
	uint32		magic;
	uint32		reserved;
	int64		snowflake_unix_ms;	/* no flake_next() id beyond this */
	pg_crc32c	crc;			/* of the fields above */
} FlakeHwmFile;

static pg_crc32c
hwm_crc(const FlakeHwmFile *data)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, offsetof(FlakeHwmFile, crc));
	FIN_CRC32C(crc);
	return crc;
}

/*
 * Read the high-water mark (Unix ms; 0 when no file exists yet).  Called in
 * the postmaster while it creates shared memory.  A damaged file stops the
 * server: without it, ids issued before could be issued again.
 */
int64
flake_hwm_read(void)
{
	FlakeHwmFile data;
	int			fd;
	int			nread;

	fd = OpenTransientFile(FLAKE_HWM_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return 0;
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", FLAKE_HWM_FILE)));
	}
	nread = read(fd, &data, sizeof(data));
	CloseTransientFile(fd);

	if (nread != sizeof(data) || data.magic != FLAKE_HWM_MAGIC ||
		!EQ_CRC32C(data.crc, hwm_crc(&data)))
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("flake high-water mark file \"%s\" is damaged", FLAKE_HWM_FILE),
				 errdetail("It records the newest timestamp flake may have issued; without it, ids could repeat."),
				 errhint("If the system clock is known to be past every issued id, remove the file and start the server again.")));
	return data.snowflake_unix_ms;
}

static void
hwm_write(int64 snowflake_unix_ms)
{
	FlakeHwmFile data;
	int			fd;
	bool		created = false;

	memset(&data, 0, sizeof(data));
	data.magic = FLAKE_HWM_MAGIC;
	data.snowflake_unix_ms = snowflake_unix_ms;
	data.crc = hwm_crc(&data);

	fd = OpenTransientFile(FLAKE_HWM_FILE, O_WRONLY | PG_BINARY);
	if (fd < 0 && errno == ENOENT)
	{
		fd = OpenTransientFile(FLAKE_HWM_FILE, O_WRONLY | O_CREAT | PG_BINARY);
		created = true;
	}
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", FLAKE_HWM_FILE)));

	/* one small write at offset 0: it fits a sector, so it is not torn */
	errno = 0;
	if (pg_pwrite(fd, &data, sizeof(data), 0) != sizeof(data))
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", FLAKE_HWM_FILE)));
	}
	if (pg_fsync(fd) != 0)
		ereport(data_sync_elevel(ERROR),
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", FLAKE_HWM_FILE)));
	CloseTransientFile(fd);

	if (created)
		fsync_fname(".", true);
}

/*
 * Make sure the persisted mark covers unix_ms before an id with that
 * timestamp is returned.
 */
void
flake_hwm_extend(int64 unix_ms)
{
	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	/* another backend may have moved it while we waited */
	if ((int64) pg_atomic_read_u64(&flake_shared->snowflake_hwm.value) < unix_ms)
	{
		int64		mark = unix_ms + FLAKE_HWM_CHUNK_MS;

		hwm_write(mark);
		pg_atomic_write_u64(&flake_shared->snowflake_hwm.value, mark);
	}
	LWLockRelease(flake_shared->lock);
}
