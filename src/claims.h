/*-------------------------------------------------------------------------
 *
 * claims.h
 *	  The rekey claims: which node each rekey used for which milliseconds.
 *
 * migrate_rekey.c chooses the node; this file keeps the claims in flake.rekeys
 * and logs each new one in WAL, so that they reach standbys and restored
 * servers.  The functions that change the file run under the lock that
 * serializes claims; shmem.c owns it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_CLAIMS_H
#define FLAKE_CLAIMS_H

#include "datafile.h"
#include "hwm.h"

/*
 * The claims' file, and the name under which another server's flake.rekeys
 * is copied into the data directory to be taken over at start (state.c).
 */
#define FLAKE_REKEYS_FILE			"flake.rekeys"
#define FLAKE_REKEYS_IMPORT_FILE	"flake.rekeys.import"

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
 * A rekey to ulidflake claims one of this many bands (the low bits of its
 * ids' entropy), recorded as node -1 - band.
 */
#define FLAKE_REKEY_BANDS		32

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

extern FlakeRekeyClaim *flake_claims_load(const char *path, uint32 *count,
										  FlakeFileProblem *problem);
extern void flake_claims_refuse(int elevel, const FlakeFileProblem *problem,
								bool import_waits);
extern FlakeRekeyClaim *flake_claims_read(uint32 *count);
extern uint32 flake_claims_merge(FlakeRekeyClaim **claims, uint32 count,
								 const FlakeRekeyClaim *added, uint32 nadded,
								 bool *changed);
extern void flake_claims_write(const FlakeRekeyClaim *claims, uint32 count);
extern void flake_claims_log(const FlakeRekeyClaim *claims, uint32 count);
extern void flake_claims_add(const FlakeRekeyClaim *added, uint32 nadded);

#endif							/* FLAKE_CLAIMS_H */
