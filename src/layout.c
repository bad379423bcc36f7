/*-------------------------------------------------------------------------
 *
 * layout.c
 *	  The layout that issued flake_next()'s ids, kept across restarts.
 *
 * The high-water mark of flake_next() is a time, which every layout maps
 * to other ids: after a restart with another flake.epoch, flake.id_bits,
 * flake.node_bits or flake.sequence_bits, ids above the mark's time can
 * equal or sort below ids issued before.  So the layout that issued ids is
 * recorded in flake.layout (replaced as datafile.c replaces flake's files)
 * and in a WAL record of its own, which standbys and restored backups
 * replay; a server whose settings lay ids out otherwise generates only
 * where every id of the new layout lies above every id the recorded one
 * can have issued up to the mark (snowflake.c checks at the first id).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xloginsert.h"
#include "utils/timestamp.h"

#include "clock.h"
#include "hwm.h"
#include "layout.h"

#define FLAKE_LAYOUT_MAGIC	0x464C4B4C	/* "FLKL" */

/* The file: magic, the layout, the CRC-32C of both. */
typedef struct FlakeLayoutFile
{
	uint32		magic;
	uint32		reserved;
	FlakeLayout layout;
	pg_crc32c	crc;
} FlakeLayoutFile;

/*
 * Read a flake.layout: true with the layout when it is intact, false with
 * the problem otherwise (FLAKE_FILE_MISSING when there is none).
 */
bool
flake_layout_read(const char *path, FlakeLayout *layout,
				  FlakeFileProblem *problem)
{
	FlakeLayoutFile file;
	size_t		len;
	char	   *data = flake_datafile_read(path, sizeof(file), &len, problem);

	if (data == NULL)
		return false;
	if (len == sizeof(file))
		memcpy(&file, data, sizeof(file));
	if (len != sizeof(file) || file.magic != FLAKE_LAYOUT_MAGIC ||
		!EQ_CRC32C(file.crc, flake_datafile_crc(&file, offsetof(FlakeLayoutFile, crc))))
	{
		uint32		magic = 0;

		memcpy(&magic, data, Min(len, sizeof(magic)));
		flake_datafile_damaged(problem, data, len, magic == FLAKE_LAYOUT_MAGIC);
		pfree(data);
		return false;
	}
	pfree(data);
	*layout = file.layout;
	return true;
}

/*
 * Replace flake.layout with the layout, and record in flake.written that
 * it was written: a missing one is lost from then on.
 */
void
flake_layout_write(const FlakeLayout *layout)
{
	FlakeLayoutFile file;

	memset(&file, 0, sizeof(file));
	file.magic = FLAKE_LAYOUT_MAGIC;
	file.layout = *layout;
	file.crc = flake_datafile_crc(&file, offsetof(FlakeLayoutFile, crc));
	flake_datafile_replace(FLAKE_LAYOUT_FILE, FLAKE_LAYOUT_TEMP_FILE,
						   &file, sizeof(file));
	flake_datafile_set_written(FLAKE_WRITTEN_LAYOUT);
}

/*
 * Record the layout, before an id of it is issued: in the file, then in
 * WAL, flushed, so that standbys and restored backups know it too.
 */
void
flake_layout_record(const FlakeLayout *layout)
{
	flake_layout_write(layout);
	XLogBeginInsert();
	XLogRegisterData((char *) layout, sizeof(*layout));
	XLogFlush(XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_LAYOUT));
}

bool
flake_layout_equal(const FlakeLayout *a, const FlakeLayout *b)
{
	return a->epoch_unix_ms == b->epoch_unix_ms && a->id_bits == b->id_bits &&
		a->node_bits == b->node_bits && a->sequence_bits == b->sequence_bits;
}

/* The largest timestamp of a layout, in ms since its epoch. */
static int64
max_timestamp(const FlakeLayout *layout)
{
	return (INT64CONST(1) << (layout->id_bits - layout->node_bits -
							  layout->sequence_bits)) - 1;
}

/*
 * Whether every id that layout new issues once its nodes are raised above
 * the mark (snowflake.c: from the mark's next millisecond on) lies above
 * every id layout old can have issued up to the mark.  A new layout that
 * cannot issue above the mark at all issues nothing (it refuses with
 * 22003), so it keeps above too.
 */
bool
flake_layout_keeps_above(const FlakeLayout *old, int64 mark_unix_ms,
						 const FlakeLayout *new)
{
	int			old_low = old->node_bits + old->sequence_bits;
	int64		old_ms = Min(Max(mark_unix_ms - old->epoch_unix_ms, 0),
							 max_timestamp(old));
	uint64		old_highest = ((uint64) old_ms << old_low) |
	(((uint64) 1 << old_low) - 1);
	int64		new_ms = mark_unix_ms - new->epoch_unix_ms + 1;

	if (new_ms > max_timestamp(new))
		return true;
	return ((uint64) Max(new_ms, 0) << (new->node_bits + new->sequence_bits)) > old_highest;
}

/* The layout as its settings read, for messages. */
char *
flake_layout_text(const FlakeLayout *layout)
{
	return psprintf("flake.epoch = '%s', flake.id_bits = %d, flake.node_bits = %d, flake.sequence_bits = %d",
					timestamptz_to_str(flake_unix_ms_to_timestamptz(layout->epoch_unix_ms)),
					layout->id_bits, layout->node_bits, layout->sequence_bits);
}
