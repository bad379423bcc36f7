/*-------------------------------------------------------------------------
 *
 * highwater.c
 *	  The persisted high-water mark of issued timestamps.
 *
 * Before an id with a timestamp beyond its family's high-water mark is
 * returned, the mark is moved a chunk further ahead and written to a small file
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
#define FLAKE_HWM_MAGIC		0x464C4B32	/* "FLK2" */

typedef struct FlakeHwmFile
{
	uint32		magic;
	uint32		reserved;
	int64		snowflake_unix_ms;	/* no flake_next() id beyond this */
	int64		randflake_unix_s;	/* no randflake_next() id beyond this */
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
 * Read the high-water marks (0 when no file exists yet).  Called in the
 * postmaster while it creates shared memory.  A damaged file stops the
 * server: without it, ids issued before could be issued again.
 */
void
flake_hwm_read(int64 *snowflake_unix_ms, int64 *randflake_unix_s)
{
	FlakeHwmFile data;
	int			fd;
	int			nread;

	*snowflake_unix_ms = 0;
	*randflake_unix_s = 0;
	fd = OpenTransientFile(FLAKE_HWM_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return;
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
	*snowflake_unix_ms = data.snowflake_unix_ms;
	*randflake_unix_s = data.randflake_unix_s;
}

static void
hwm_write(int64 snowflake_unix_ms, int64 randflake_unix_s)
{
	FlakeHwmFile data;
	int			fd;
	bool		created = false;

	memset(&data, 0, sizeof(data));
	data.magic = FLAKE_HWM_MAGIC;
	data.snowflake_unix_ms = snowflake_unix_ms;
	data.randflake_unix_s = randflake_unix_s;
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
 * Make sure the persisted mark of a family covers value (its timestamp unit)
 * before an id with that timestamp is returned.
 */
void
flake_hwm_extend(FlakeHwm which, int64 value)
{
	pg_atomic_uint64 *snowflake = &flake_shared->hwm.value.snowflake_ms;
	pg_atomic_uint64 *randflake = &flake_shared->hwm.value.randflake_s;
	pg_atomic_uint64 *mark = which == FLAKE_HWM_SNOWFLAKE ? snowflake : randflake;

	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	/* another backend may have moved it while we waited */
	if ((int64) pg_atomic_read_u64(mark) < value)
	{
		int64		next = value + (which == FLAKE_HWM_SNOWFLAKE ?
									FLAKE_HWM_CHUNK_MS : FLAKE_HWM_CHUNK_S);

		if (which == FLAKE_HWM_SNOWFLAKE)
			hwm_write(next, (int64) pg_atomic_read_u64(randflake));
		else
			hwm_write((int64) pg_atomic_read_u64(snowflake), next);
		pg_atomic_write_u64(mark, next);
	}
	LWLockRelease(flake_shared->lock);
}
