/*-------------------------------------------------------------------------
 *
 * flake.c
 *	  Module entry point of the flake extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "flake.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	flake_define_settings();
	flake_log_filter_init();

	/*
	 * Shared state can only be set up from shared_preload_libraries.  When
	 * loaded later, flake_next() refuses to run and ulidflake_next() keeps
	 * its state per backend.  The prefix is reserved only then: reserving it
	 * later would drop the server-start settings that decoding still reads.
	 * flake's WAL records can be replayed only with its resource manager
	 * registered, which also happens only here.
	 */
	if (process_shared_preload_libraries_in_progress)
	{
		flake_shmem_init();
		flake_wal_register();
		MarkGUCPrefixReserved("flake");
	}
}
