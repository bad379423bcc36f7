/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Server-wide state of the generators, in shared memory.
 *
 * The state is reserved only when flake is in shared_preload_libraries.
 * Code that uses it checks flake_shared for NULL first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "compat.h"
#include "flake.h"

FlakeSharedState *flake_shared = NULL;

#ifdef FLAKE_HAVE_SHMEM_REQUEST_HOOK
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
flake_shmem_size(void)
{
	return MAXALIGN(sizeof(FlakeSharedState));
}

static void
flake_shmem_request(void)
{
#ifdef FLAKE_HAVE_SHMEM_REQUEST_HOOK
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
#endif
	RequestAddinShmemSpace(flake_shmem_size());
}

/*
 * Attach to the shared state, creating it in the postmaster.  After a backend
 * crash the postmaster creates it anew.
 */
static void
flake_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	flake_shared = ShmemInitStruct("flake", flake_shmem_size(), &found);
	if (!found)
		pg_atomic_init_u64(&flake_shared->ulid_last, 0);
	LWLockRelease(AddinShmemInitLock);
}

void
flake_shmem_init(void)
{
#ifdef FLAKE_HAVE_SHMEM_REQUEST_HOOK
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = flake_shmem_request;
#else
	flake_shmem_request();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = flake_shmem_startup;
}
