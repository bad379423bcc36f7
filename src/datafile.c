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
 * Every file is read only if it is a regular file (checked before it is
 * opened, and again on the file opened), no larger than its reader's
 * bound, and opened without blocking: a FIFO, a device or a directory put
 * in its place is refused at once and never opened, or read, so that it
 * cannot hang a backend (a FIFO blocks open() past statement_timeout and
 * pg_terminate_backend()) nor make it read without end.  A symbolic link
 * is refused too: flake replaces its files by renaming (a link there
 * would not survive the next write), and a file taken over must be a copy,
 * not a link to a file that may still change.
 *
 * flake.written records which of flake.hwm, flake.rekeys and flake.layout
 * flake has written here: once one was, a missing one is lost, not
 * "nothing issued" (state.c) or "the layout of a server before 1.5"
 * (snowflake.c).
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/fd.h"

#include "datafile.h"

#define FLAKE_WRITTEN_TEMP		"flake.written.tmp"
#define FLAKE_WRITTEN_MAGIC		0x464C4B57	/* "FLKW" */
#define FLAKE_WRITTEN_ALL		(FLAKE_WRITTEN_HWM | FLAKE_WRITTEN_REKEYS | FLAKE_WRITTEN_LAYOUT)

/* flake.written: the files written, and the CRC-32C of that field */
typedef struct FlakeWrittenFile
{
	uint32		magic;
	uint32		files;
	pg_crc32c	crc;
} FlakeWrittenFile;

/* what this process knows to be recorded in flake.written already */
static uint32 written_known = 0;

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

	/*
	 * A new file, never one found there: what a crash left, or a FIFO, a link
	 * or a device put there, is removed first; O_EXCL refuses what cannot be
	 * removed (a directory) instead of opening it.
	 */
	if (unlink(temp) != 0 && errno != ENOENT)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", temp),
				 errhint("Remove \"%s\" from the data directory: flake writes its files there first.",
						 temp)));
	fd = OpenTransientFile(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", temp),
				 errhint("Remove \"%s\" from the data directory: flake writes its files there first.",
						 temp)));

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
 * the problem: FLAKE_FILE_MISSING, FLAKE_FILE_UNREADABLE (with errno),
 * FLAKE_FILE_NOT_REGULAR, or FLAKE_FILE_TOO_LARGE beyond max_size bytes.
 * What is not a regular file is never opened; a regular file is opened
 * without blocking and without following a link, and checked again once
 * open, so that nothing put in its place meanwhile is read.
 */
char *
flake_datafile_read(const char *path, size_t max_size, size_t *len,
					FlakeFileProblem *problem)
{
	struct stat named;
	struct stat st;
	char	   *data = NULL;
	int			fd;

	memset(problem, 0, sizeof(*problem));
	problem->status = FLAKE_FILE_OK;
	problem->max_size = max_size;
	*len = 0;
	if (lstat(path, &named) != 0)
	{
		problem->status = errno == ENOENT ? FLAKE_FILE_MISSING : FLAKE_FILE_UNREADABLE;
		problem->saved_errno = errno;
		return NULL;
	}
	if (!S_ISREG(named.st_mode))
	{
		problem->status = FLAKE_FILE_NOT_REGULAR;
		return NULL;
	}
	if ((size_t) named.st_size > max_size)
	{
		problem->status = FLAKE_FILE_TOO_LARGE;
		return NULL;
	}
	fd = OpenTransientFile(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | PG_BINARY);
	if (fd < 0)
	{
		problem->status = errno == ENOENT ? FLAKE_FILE_MISSING :
			errno == ELOOP ? FLAKE_FILE_NOT_REGULAR : FLAKE_FILE_UNREADABLE;
		problem->saved_errno = errno;
		return NULL;
	}
	if (fstat(fd, &st) != 0)
	{
		problem->status = FLAKE_FILE_UNREADABLE;
		problem->saved_errno = errno;
	}
	else if (!S_ISREG(st.st_mode) || st.st_dev != named.st_dev ||
			 st.st_ino != named.st_ino)
		problem->status = FLAKE_FILE_NOT_REGULAR;
	else if ((size_t) st.st_size > max_size)
		problem->status = FLAKE_FILE_TOO_LARGE;
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
 * Which of flake.hwm, flake.rekeys and flake.layout flake has written in a
 * data directory (NULL: this server's), from its flake.written: none where
 * there is none, and all where it cannot be read, since a file then
 * missing may have held ids' marks or their layout.
 */
uint32
flake_datafile_written(const char *directory)
{
	char		path[MAXPGPATH];
	FlakeFileProblem problem;
	FlakeWrittenFile file;
	size_t		len;
	char	   *data;

	if (directory == NULL)
		strlcpy(path, FLAKE_WRITTEN_FILE, sizeof(path));
	else
		snprintf(path, sizeof(path), "%s/%s", directory, FLAKE_WRITTEN_FILE);
	data = flake_datafile_read(path, sizeof(file), &len, &problem);
	if (data == NULL)
		return problem.status == FLAKE_FILE_MISSING ? 0 : FLAKE_WRITTEN_ALL;
	memcpy(&file, data, Min(len, sizeof(file)));
	pfree(data);
	if (len != sizeof(file) || file.magic != FLAKE_WRITTEN_MAGIC ||
		!EQ_CRC32C(file.crc, flake_datafile_crc(&file, offsetof(FlakeWrittenFile, crc))))
		return FLAKE_WRITTEN_ALL;
	return file.files & FLAKE_WRITTEN_ALL;
}

/*
 * Record in flake.written that flake wrote the files (FLAKE_WRITTEN_*),
 * durably, once, after writing them: a crash in between leaves a file
 * that is there but not recorded, which the next start records.
 */
void
flake_datafile_set_written(uint32 files)
{
	FlakeWrittenFile file;

	if ((written_known & files) == files)
		return;
	written_known = flake_datafile_written(NULL);
	if ((written_known & files) == files)
		return;
	memset(&file, 0, sizeof(file));
	file.magic = FLAKE_WRITTEN_MAGIC;
	file.files = written_known | files;
	file.crc = flake_datafile_crc(&file, offsetof(FlakeWrittenFile, crc));
	flake_datafile_replace(FLAKE_WRITTEN_FILE, FLAKE_WRITTEN_TEMP,
						   &file, sizeof(file));
	written_known = file.files;
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
		case FLAKE_FILE_NOT_REGULAR:
			return errmsg("flake state file \"%s\" is not a regular file",
						  path);
		case FLAKE_FILE_TOO_LARGE:
			return errmsg("flake state file \"%s\" is larger than flake writes it (at most %zu bytes)",
						  path, problem->max_size);
		case FLAKE_FILE_LOST:
			return errmsg("flake state file \"%s\" is missing, though flake wrote it",
						  path);
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
