/*-------------------------------------------------------------------------
 *
 * datafile.h
 *	  Small files of flake's own in the data directory: replaced durably,
 *	  and read saying what is wrong with them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_DATAFILE_H
#define FLAKE_DATAFILE_H

#include "port/pg_crc32c.h"

/* What reading one of flake's files found. */
typedef enum FlakeFileStatus
{
	FLAKE_FILE_OK,
	FLAKE_FILE_MISSING,			/* no such file */
	FLAKE_FILE_UNREADABLE,		/* open or read failed: saved_errno */
	FLAKE_FILE_DAMAGED,			/* truncated, a wrong checksum, not flake's */
	FLAKE_FILE_UNKNOWN_FORMAT,	/* a flake file of a format not read here */
	FLAKE_FILE_NOT_REGULAR,		/* a directory, FIFO, device or symbolic link */
	FLAKE_FILE_TOO_LARGE,		/* larger than the reader's bound: max_size */
	FLAKE_FILE_LOST				/* missing, though flake wrote it (state.c) */
} FlakeFileStatus;

typedef struct FlakeFileProblem
{
	FlakeFileStatus status;
	int			saved_errno;	/* FLAKE_FILE_UNREADABLE */
	uint32		magic;			/* FLAKE_FILE_UNKNOWN_FORMAT: the file's */
	size_t		max_size;		/* FLAKE_FILE_TOO_LARGE: the bound */
} FlakeFileProblem;

/*
 * flake.written records which of flake's files flake has written in this
 * data directory (see datafile.c): bits of these.
 */
#define FLAKE_WRITTEN_FILE		"flake.written"
#define FLAKE_WRITTEN_HWM		0x01
#define FLAKE_WRITTEN_REKEYS	0x02
#define FLAKE_WRITTEN_LAYOUT	0x04

/*
 * The magic numbers of flake's files are "FLK" and a version or kind
 * ("FLK5", "FLKR"): one of those this release does not read is a file of
 * another release, not a damaged one.
 */
#define FLAKE_MAGIC_PREFIX(magic)	(((magic) & 0xFFFFFF00) == 0x464C4B00)

extern pg_crc32c flake_datafile_crc(const void *data, size_t len);
extern void flake_datafile_replace(const char *path, const char *temp,
								   const void *data, size_t len);
extern char *flake_datafile_read(const char *path, size_t max_size,
								 size_t *len, FlakeFileProblem *problem);
extern uint32 flake_datafile_written(const char *directory);
extern void flake_datafile_set_written(uint32 files);
extern void flake_datafile_damaged(FlakeFileProblem *problem,
								   const char *data, size_t len, bool known);
extern int	flake_datafile_errmsg(const char *path,
								  const FlakeFileProblem *problem);

#endif							/* FLAKE_DATAFILE_H */
