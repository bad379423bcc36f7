/*-------------------------------------------------------------------------
 *
 * datafile.h
 *	  Small files of flake's own in the data directory, replaced durably.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_DATAFILE_H
#define FLAKE_DATAFILE_H

#include "port/pg_crc32c.h"

extern pg_crc32c flake_datafile_crc(const void *data, size_t len);
extern void flake_datafile_replace(const char *path, const char *temp,
								   const void *data, size_t len);

#endif							/* FLAKE_DATAFILE_H */
