/*-------------------------------------------------------------------------
 *
 * claims.h
 *	  The rekey claims: which node each rekey used for which milliseconds.
 *
 * migrate_rekey.c chooses the node; this file keeps the claims in flake.rekeys
 * and logs each new one in WAL, so that they reach standbys and restored
 * servers.  The functions take the lock that serializes claims as an
 * argument; shmem.c owns it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_CLAIMS_H
#define FLAKE_CLAIMS_H

#include "storage/lwlock.h"

#include "hwm.h"

/*
 * The WAL record of new claims (an array of FlakeRekeyClaim), in flake's
 * resource manager beside the marks' record.
 */
#define XLOG_FLAKE_REKEY_CLAIMS	0x10

/*
 * At most this many claims are kept (24 bytes each): claims of one node
 * that meet are merged, and the file is read whole for every claim.
 */
#define FLAKE_REKEY_MAX_CLAIMS	65536

/*
 * One claim: a node (or -1 - a ulidflake band) for the milliseconds
 * first_ms to last_ms of its ids.  The layout of flake.rekeys and of the
 * WAL record.
 */
typedef struct FlakeRekeyClaim
{
	int64		first_ms;
	int64		last_ms;
	int32		node;
	int32		reserved;
} FlakeRekeyClaim;

extern FlakeRekeyClaim *flake_claims_read(uint32 *count);
extern void flake_claims_add(const FlakeRekeyClaim *added, uint32 nadded,
							 bool log);
extern void flake_claims_import(void);

#endif							/* FLAKE_CLAIMS_H */
