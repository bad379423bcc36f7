/*-------------------------------------------------------------------------
 *
 * datafile.c
 *	  Small files of flake's own in the data directory: replaced durably,
 *	  and read saying what is wrong with them.
 *
 * flake.hwm (hwm.c) and flake.rekeys (claims.c) record what must never be
 * handed out twice.  Each is replaced, never written in place: the new
 * version goes to a temporary file that is fsynced and renamed over the
 * old one durably, so a full disk or a crash at any point leaves the old
 * version or the new one, each checked by its CRC when read.
 *
 * Damage comes from outside (disk errors, editing, a wrong copy, a file
 * of another release, permissions), and flake's files decide only whether
 * ids may be generated: so reading one never raises an error, it says
 * what is wrong, and the callers refuse generation alone (state.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fd.h"

#include "datafile.h"

/*
 * The largest file flake reads: its files are far smaller (the claims at
 * most 1.5 MB); a larger one is not flake's.
 */
#define FLAKE_DATAFILE_MAX_SIZE		(64 * 1024 * 1024)

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

/*
 * The contents of the file at path (palloc'd, *len bytes), or NULL with
 * the problem: FLAKE_FILE_MISSING, FLAKE_FILE_UNREADABLE (with errno), or
 * FLAKE_FILE_DAMAGED for what is not a regular file of a size flake
 * writes.  Opened without blocking, so that a FIFO in its place cannot
 * hang the caller.
 */
char *
flake_datafile_read(const char *path, size_t *len, FlakeFileProblem *problem)
{
	struct stat st;
	char	   *data = NULL;
	int			fd;

	memset(problem, 0, sizeof(*problem));
	problem->status = FLAKE_FILE_OK;
	*len = 0;
	fd = OpenTransientFile(path, O_RDONLY | O_NONBLOCK | PG_BINARY);
	if (fd < 0)
	{
		problem->status = errno == ENOENT ? FLAKE_FILE_MISSING : FLAKE_FILE_UNREADABLE;
		problem->saved_errno = errno;
		return NULL;
	}
	if (fstat(fd, &st) != 0)
	{
		problem->status = FLAKE_FILE_UNREADABLE;
		problem->saved_errno = errno;
	}
	else if (!S_ISREG(st.st_mode) || st.st_size > FLAKE_DATAFILE_MAX_SIZE)
		problem->status = FLAKE_FILE_DAMAGED;
	else
	{
		ssize_t		got;

		data = palloc(Max(st.st_size, 1));
		errno = 0;
		got = read(fd, data, st.st_size);
		if (got < 0)
		{
			problem->status = FLAKE_FILE_UNREADABLE;
			problem->saved_errno = errno;
		}
		else if (got != st.st_size)
			problem->status = FLAKE_FILE_DAMAGED;
		*len = (size_t) Max(got, 0);
	}
	CloseTransientFile(fd);
	if (problem->status != FLAKE_FILE_OK && data != NULL)
	{
		pfree(data);
		data = NULL;
	}
	return data;
}

/*
 * Say that a file's contents are not what its reader takes: of another
 * release of flake when its magic number is one of flake's that the reader
 * does not know (known: it knows the one the file has), damaged otherwise.
 */
void
flake_datafile_damaged(FlakeFileProblem *problem, const char *data,
					   size_t len, bool known)
{
	uint32		magic = 0;

	if (len >= sizeof(magic))
		memcpy(&magic, data, sizeof(magic));
	problem->status = !known && FLAKE_MAGIC_PREFIX(magic) ?
		FLAKE_FILE_UNKNOWN_FORMAT : FLAKE_FILE_DAMAGED;
	problem->magic = magic;
}

/*
 * The message of a problem with the file at path, for ereport: the same
 * words for each of flake's files, wherever it lies.
 */
int
flake_datafile_errmsg(const char *path, const FlakeFileProblem *problem)
{
	switch (problem->status)
	{
		case FLAKE_FILE_UNREADABLE:
			return errmsg("could not read flake state file \"%s\": %s",
						  path, strerror(problem->saved_errno));
		case FLAKE_FILE_UNKNOWN_FORMAT:
			return errmsg("flake state file \"%s\" is in a format this version of flake does not read (\"%c%c%c%c\")",
						  path, (char) (problem->magic >> 24),
						  (char) (problem->magic >> 16),
						  (char) (problem->magic >> 8),
						  isprint((unsigned char) problem->magic) ?
						  (char) problem->magic : '?');
		default:
			return errmsg("flake state file \"%s\" is damaged", path);
	}
}
