/*-------------------------------------------------------------------------
 *
 * wal.h
 *	  flake's WAL resource manager.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_WAL_H
#define FLAKE_WAL_H

extern void flake_wal_register(void);

#endif							/* FLAKE_WAL_H */
