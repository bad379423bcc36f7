/*-------------------------------------------------------------------------
 *
 * migrate_remap.c
 *	  flake_internal.migrate_lookup(): old ids to new ones through a mapping table.
 *
 * A rekey rewrites each table once, changing the type and the ids of its
 * columns in one ALTER TABLE ... TYPE ... USING flake_internal.migrate_lookup(map,
 * column).  The mapping table is read once per statement, in old id order,
 * into two arrays kept with the function's call site; each row's old id is
 * then found by binary search instead of a query.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

/* The (old_id, new_id) pairs of one mapping table, by old_id. */
typedef struct RemapCache
{
	Oid			map;
	uint64		count;
	int64	   *old_ids;
	int64	   *new_ids;
} RemapCache;

PG_FUNCTION_INFO_V1(flake_migrate_lookup);

#define REMAP_FETCH 10000

static RemapCache *
load_map(MemoryContext mcxt, Oid map)
{
	RemapCache *cache = MemoryContextAllocZero(mcxt, sizeof(RemapCache));
	uint64		allocated = REMAP_FETCH;
	StringInfoData query;
	Portal		portal;
	char	   *relname = get_rel_name(map);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", map)));
	cache->map = map;
	cache->old_ids = MemoryContextAllocHuge(mcxt, sizeof(int64) * allocated);
	cache->new_ids = MemoryContextAllocHuge(mcxt, sizeof(int64) * allocated);

	initStringInfo(&query);
	appendStringInfo(&query,
					 "SELECT old_id, CAST(new_id AS pg_catalog.int8) FROM %s ORDER BY old_id",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(map)),
												relname));
	SPI_connect();
	portal = SPI_cursor_open_with_args(NULL, query.data, 0, NULL, NULL, NULL, true, 0);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, REMAP_FETCH);
		if (SPI_processed == 0)
			break;
		if (cache->count + SPI_processed > allocated)
		{
			allocated = Max(allocated * 2, cache->count + SPI_processed);
			cache->old_ids = repalloc_huge(cache->old_ids, sizeof(int64) * allocated);
			cache->new_ids = repalloc_huge(cache->new_ids, sizeof(int64) * allocated);
		}
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[i];
			bool		old_null;
			bool		new_null;
			Datum		old_id = SPI_getbinval(tuple, SPI_tuptable->tupdesc, 1, &old_null);
			Datum		new_id = SPI_getbinval(tuple, SPI_tuptable->tupdesc, 2, &new_null);

			if (old_null || new_null)
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("mapping table %s has a NULL id", relname)));
			cache->old_ids[cache->count] = DatumGetInt64(old_id);
			cache->new_ids[cache->count] = DatumGetInt64(new_id);
			cache->count++;
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	pfree(query.data);
	return cache;
}

/*
 * flake_internal.migrate_lookup(map regclass, old_id bigint): the new id of old_id
 * in the mapping table, or old_id itself when the table does not list it
 * (a row whose key was not rekeyed, or a reference to no row).
 */
Datum
flake_migrate_lookup(PG_FUNCTION_ARGS)
{
	Oid			map = PG_GETARG_OID(0);
	int64		old_id = PG_GETARG_INT64(1);
	RemapCache *cache = (RemapCache *) fcinfo->flinfo->fn_extra;
	uint64		lo = 0;
	uint64		hi;

	if (cache == NULL || cache->map != map)
	{
		cache = load_map(fcinfo->flinfo->fn_mcxt, map);
		fcinfo->flinfo->fn_extra = cache;
	}
	hi = cache->count;
	while (lo < hi)
	{
		uint64		mid = lo + (hi - lo) / 2;

		if (cache->old_ids[mid] < old_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < cache->count && cache->old_ids[lo] == old_id)
		PG_RETURN_INT64(cache->new_ids[lo]);
	PG_RETURN_INT64(old_id);
}
