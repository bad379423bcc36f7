/*-------------------------------------------------------------------------
 *
 * layout.h
 *	  The layout that issued flake_next()'s ids: flake.epoch and the bits,
 *	  recorded in flake.layout and in WAL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_LAYOUT_H
#define FLAKE_LAYOUT_H

#include "datafile.h"

#define FLAKE_LAYOUT_FILE		"flake.layout"
#define FLAKE_LAYOUT_TEMP_FILE	"flake.layout.tmp"

/* The layout record of flake's resource manager (hwm.h has the others). */
#define XLOG_FLAKE_LAYOUT		0x40

/* A flake_next() layout: what the file and the WAL record hold. */
typedef struct FlakeLayout
{
	int64		epoch_unix_ms;
	int32		id_bits;
	int32		node_bits;
	int32		sequence_bits;
	int32		reserved;		/* 0 */
} FlakeLayout;

/* Where flake_next() stands with the recorded layout, in shared memory. */
typedef enum FlakeLayoutStatus
{
	FLAKE_LAYOUT_UNCHECKED,		/* not compared with the settings yet */
	FLAKE_LAYOUT_ACCEPTED,		/* the settings' layout is recorded */
	FLAKE_LAYOUT_REFUSED		/* it could issue ids again: refused */
} FlakeLayoutStatus;

extern bool flake_layout_read(const char *path, FlakeLayout *layout,
							  FlakeFileProblem *problem);
extern void flake_layout_record(const FlakeLayout *layout);
extern void flake_layout_write(const FlakeLayout *layout);
extern bool flake_layout_equal(const FlakeLayout *a, const FlakeLayout *b);
extern bool flake_layout_keeps_above(const FlakeLayout *old, int64 mark_unix_ms,
									 const FlakeLayout *new);
extern char *flake_layout_text(const FlakeLayout *layout);

#endif							/* FLAKE_LAYOUT_H */
