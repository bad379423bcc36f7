/*-------------------------------------------------------------------------
 *
 * citus.h
 *	  The Citus group of this backend's database, which gives each Citus
 *	  node its own share of the families' node spaces.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_CITUS_H
#define FLAKE_CITUS_H

/* No Citus in this database: the families use their settings as they are. */
#define FLAKE_CITUS_NONE	(-1)

extern bool flake_citus_latched;
extern bool flake_citus_recheck;
extern int32 flake_citus_latched_group;
extern int32 flake_citus_read_group(const char *generator);
extern bool flake_citus_shard_transfer(void);
extern const char *flake_citus_shard_table(const char *relname);
extern int64 flake_citus_share(int32 group, int space_bits, int share_bits,
							   const char *generator, const char *setting);

/*
 * The Citus group this backend generates for, or FLAKE_CITUS_NONE (generator
 * is the generator's SQL name, for messages): read at
 * its first call and kept, so that after that it costs a branch.  A change
 * of the catalog that may have moved the group (a relcache invalidation of
 * pg_dist_local_group, Citus installed or removed) makes the next call read
 * it again, and refuse if it differs (see flake_citus_read_group).
 */
static inline int32
flake_citus_group(const char *generator)
{
	if (likely(flake_citus_latched && !flake_citus_recheck))
		return flake_citus_latched_group;
	return flake_citus_read_group(generator);
}

#endif							/* FLAKE_CITUS_H */
