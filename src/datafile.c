/*-------------------------------------------------------------------------
 *
 * datafile.c
 *	  Small files of flake's own in the data directory, replaced durably.
 *
 * flake.hwm (hwm.c) and flake.rekeys (migrate_rekey.c) record what must never
 * be handed out twice.  Each is replaced, never written in place: the new
 * version goes to a temporary file that is fsynced and renamed over the
 * old one durably, so a full disk or a crash at any point leaves the old
 * version or the new one, each checked by its CRC when read.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "storage/fd.h"

#include "datafile.h"

/* The CRC-32C of a file's contents, for the file to carry. */
pg_crc32c
flake_datafile_crc(const void *data, size_t len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len);
	FIN_CRC32C(crc);
	return crc;
}

/*
 * Replace the file at path with len bytes of data: write them to temp,
 * fsync it, rename it over path and fsync the directory.  Until the rename
 * the old file stands; a temporary file that a failed write leaves is
 * removed, and one that a crash leaves is overwritten by the next
 * replacement.  Errors are ERRORs; the caller serializes replacements.
 */
void
flake_datafile_replace(const char *path, const char *temp,
					   const void *data, size_t len)
{
	int			fd;

	fd = OpenTransientFile(temp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", temp)));

	errno = 0;
	if (write(fd, data, len) != (ssize_t) len)
	{
		int			save_errno = errno ? errno : ENOSPC;

		CloseTransientFile(fd);
		unlink(temp);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", temp)));
	}
	if (pg_fsync(fd) != 0)
		ereport(data_sync_elevel(ERROR),
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", temp)));
	if (CloseTransientFile(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", temp)));

	durable_rename(temp, path, ERROR);
}
