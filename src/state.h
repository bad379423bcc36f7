/*-------------------------------------------------------------------------
 *
 * state.h
 *	  flake's state files as a whole: what is wrong with them, taking over
 *	  another server's, and repairing them.
 *
 * The functions take the state's place in shared memory, the marks' shared
 * state and (where they take it) the lock that serializes both; shmem.c
 * owns them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_STATE_H
#define FLAKE_STATE_H

#include "storage/lwlock.h"

#include "claims.h"
#include "datafile.h"
#include "hwm.h"

/* flake's files in the data directory. */
typedef enum FlakeStateFile
{
	FLAKE_STATE_HWM,
	FLAKE_STATE_REKEYS,
	FLAKE_STATE_HWM_IMPORT,
	FLAKE_STATE_REKEYS_IMPORT
} FlakeStateFile;

/* A file that cannot be used, and why. */
typedef struct FlakeStateProblem
{
	bool		set;
	FlakeStateFile file;
	FlakeFileProblem problem;
} FlakeStateProblem;

/*
 * What is wrong with the files, in shared memory, under the marks' lock,
 * and which of flake.hwm and flake.rekeys were there in this server's life
 * (read, damaged or written): one of those missing later was lost.
 * The span of the claims that WAL replay brought while flake.rekeys could
 * not be read (node -1 - band for ulidflake bands, as in the file) is
 * claimed for every node between the lowest and the highest when the file
 * is repaired.
 */
typedef struct FlakeState
{
	FlakeStateProblem generation;	/* refuses the generators and claims */
	FlakeStateProblem claims;	/* refuses rekey claims: flake.rekeys */
	uint32		written;		/* FLAKE_WRITTEN_*: files seen in this life */
	bool		replayed;
	int32		replayed_min_node;
	int32		replayed_max_node;
	int64		replayed_first_ms;
	int64		replayed_last_ms;
} FlakeState;

/*
 * Another server's state, from its data directory: its marks, its system
 * identifier and the servers its flake.hwm names (servers.id), its claims.
 */
typedef struct FlakeOtherState
{
	FlakeMarks	marks;
	FlakeServers servers;
	FlakeRekeyClaim *claims;
	uint32		nclaims;
} FlakeOtherState;

extern void flake_state_start(FlakeState *state, FlakeMarks *marks);
extern bool flake_state_retry(FlakeState *state, FlakeMarkState *marks);
extern void flake_state_refuse(const FlakeState *state, bool claims);
extern void flake_state_read_other(const char *directory,
								   uint64 system_identifier,
								   FlakeOtherState *other);
extern void flake_state_take_over(FlakeState *state, FlakeMarkState *marks,
								  const FlakeOtherState *other);
extern void flake_state_repair(FlakeState *state, FlakeMarkState *marks,
							   const FlakeMarks *accepted,
							   const FlakeRekeyClaim *cover, uint32 ncover,
							   bool layout_repaired);
extern bool flake_state_repair_again(FlakeState *state, FlakeMarkState *marks,
									 const FlakeMarks *accepted,
									 const FlakeMarks *trusted);
extern void flake_state_warn(const FlakeState *state);
extern void flake_state_redo_marks(FlakeState *state, FlakeMarkState *marks,
								   LWLock *lock, const FlakeMarks *logged,
								   const uint64 *servers, uint32 count);
extern void flake_state_redo_set(FlakeState *state, FlakeMarkState *marks,
								 LWLock *lock, const FlakeMarks *logged);
extern void flake_state_redo_claims(FlakeState *state, LWLock *lock,
									const FlakeRekeyClaim *claims,
									uint32 count);

#endif							/* FLAKE_STATE_H */
